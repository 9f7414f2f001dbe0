"""``python -m pmc.testing.pipecat_bot --port N --log FILE``: serve the real Pipecat bot."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, route loguru to a file, then serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m pmc.testing.pipecat_bot")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True, help="the JSON-lines event log")
    args = parser.parse_args(argv)
    from loguru import logger

    # Before Pipecat is imported: its banner and ~41 debug lines a call go to a file, not stderr.
    logger.remove()
    logger.add(str(args.log) + ".loguru", level="INFO")
    logger.add(sys.stderr, level="ERROR")
    from pmc.testing.pipecat_bot._app import serve

    serve(args.port, args.log)


if __name__ == "__main__":
    main()
