"""Statistics of episode scores: point estimates with bootstrap confidence intervals."""
