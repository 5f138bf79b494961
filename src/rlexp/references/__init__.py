"""Reference results: what each tuned pair reaches over seeds (``files``), and whether a run reproduced
it (``verdict``); ``rlexp report --reference`` makes the reference a group of a report (rlexp.reporting)."""
