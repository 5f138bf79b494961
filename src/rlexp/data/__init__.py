"""Data that ships with rlexp: ``reference/<algo>_<env>.json``, what a tuned pair reaches over seeds at its
tuned budget (written by benchmarks/reference.py; the format is in docs/reference/reference-results.md), and
``zoo_benchmark.csv``, RL Zoo's published score of each pair (written by tools/zoo_benchmark.py)."""
