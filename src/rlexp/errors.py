"""The one exception type that the command line turns into a one-line error message."""


class ConfigError(ValueError):
    """A bad value in the experiment config, reported without a traceback.

    The message names the offending key or value (and the valid choices where there are few).
    """
