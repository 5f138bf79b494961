"""Files written whole or not at all: atomic writes, directories swapped in whole, what killed writers left."""
