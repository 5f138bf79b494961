"""Configuration: the typed schema, validation that builds nothing, and the overrides rlexp writes."""
