"""Figures: learning curves of runs (rlexp plot, RUN/curves.png) and a report's figures."""
