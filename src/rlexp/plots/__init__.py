"""Figures drawn from run directories (matplotlib, imported only when a figure is drawn)."""
