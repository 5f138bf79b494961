"""``python -m rlexp`` and the ``rlexp`` console script: rlexp.cli.console, loaded so that Ctrl-C while the
command itself loads (Hydra, the configs) is one line too."""


def console() -> None:
    try:
        from rlexp.cli import console as command
    except KeyboardInterrupt:
        from rlexp.process_exit import stopped_by_ctrl_c

        stopped_by_ctrl_c("before the run started; nothing was written")
    command()


if __name__ == "__main__":
    console()
