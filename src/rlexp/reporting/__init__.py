"""rlexp report: multi-seed statistics, tables and figures from run dirs."""
