from rlexp.cli import console

console()
