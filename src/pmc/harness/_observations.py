"""What a run observes of its servers, logged as it happens so that a killed invocation keeps it.

Each observation (a passing failure and its backoff, a stepped-down limit, what a finished
rollout sent that pmc does not know) is one line of the run folder's ``observed.jsonl``, flushed
as it is written: an :class:`Observed` of that alone, with its system and the invocation that
made it. :func:`fold_observations` adds the log to ``run.json``'s ``observed`` and then removes
it. ``run.json`` names the invocations it folded (``observed_folded``) until the log is gone, so
a kill between the two never counts a line twice (docs/architecture.md "Protocol").
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import IO

from pmc import io
from pmc.errors import PmcError
from pmc.harness._run import Run, RunRecord, read_run_record, write_run_record
from pmc.harness._tally import Observed


class ObservationLog:
    """This invocation's observations, appended to a run's log one flushed line at a time."""

    def __init__(self, path: Path, invocation: str | None = None) -> None:
        self.path = path
        self.invocation = invocation or uuid.uuid4().hex
        """What keys this invocation's lines (a fresh id unless a test gives one)."""
        self._file: IO[str] | None = None

    def write(self, system: str, observed: Observed) -> None:
        """Append one observation of ``system`` and flush it (a kill keeps what was written)."""
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        # The wait unrounded: the record rounds the sum, not each part.
        data = observed.to_dict() | {"waited_s": observed.waited_s}
        self._file.write(io.json_line({"invocation": self.invocation, "system": system, **data}))
        self._file.flush()

    def close(self) -> None:
        """Close the log file (the next observation would open it again)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> ObservationLog:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def read_observation_log(path: Path) -> list[tuple[str, str, Observed]]:
    """The log's lines as (invocation, system, observation); a line a kill tore is left out."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    # Every whole line ends in a newline: what follows the last one was torn by a kill.
    lines = text.split("\n")[:-1]
    found = []
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
            found.append((str(data["invocation"]), str(data["system"]), Observed.from_dict(data)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PmcError(
                f"{path}: line {number} is not an observation ({type(exc).__name__}: {exc})"
            ) from None
    return found


def fold_observations(run: Run) -> RunRecord:
    """Add the log's observations to ``run.json``, each once, then remove the log; the record.

    ``run.json`` is rewritten first, naming the invocations folded; a fold after a kill skips
    their lines, removes the log, and then drops the names.
    """
    record = read_run_record(run.record_path)
    lines = read_observation_log(run.observation_log)
    sums: dict[str, Observed] = {}
    for invocation, system, observed in lines:
        if invocation not in record.folded:
            sums[system] = sums[system].plus(observed) if system in sums else observed
    if sums:
        record = record.with_observed(sums, folded={invocation for invocation, _, _ in lines})
        write_run_record(run.record_path, record)
    run.observation_log.unlink(missing_ok=True)
    if record.folded:
        record = replace(record, folded=())
        write_run_record(run.record_path, record)
    return record
