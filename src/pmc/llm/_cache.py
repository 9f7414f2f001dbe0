"""A persistent JSONL cache of model answers, so a rerun asks nothing it has asked before.

Each line is one answer: ``{"schema_version", "key": {"item_id", "model", "prompt_version"},
"model", "raw", "data"}``. Lines are only ever appended, one write each, flushed and synced. A
process killed mid-write leaves at most one cut-off line, which loading skips (that item is simply
asked again). When a key appears twice, the later line wins.

The key does not look at the prompt text: change ``prompt_version`` whenever the prompt changes,
or the cache will keep answering with the old prompt's answers.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pmc.errors import InputError
from pmc.io import schema_version
from pmc.llm._client import LlmAnswer, LlmClient, LlmRequest

log = logging.getLogger(__name__)

CACHE_SCHEMA_VERSION = 1
"""The version of one cache line's layout."""


@dataclass(frozen=True)
class CacheKey:
    """What makes two questions the same question.

    Attributes:
        item_id: The item asked about (content-derived, so it changes when the item does).
        model: The client's ``PROVIDER:MODEL`` name.
        prompt_version: The version of the prompt; bump it whenever the prompt text changes.
    """

    item_id: str
    model: str
    prompt_version: str


class JudgeCache:
    """Answers on disk, keyed by item, model and prompt version; loaded when opened.

    Args:
        path: The JSONL file; it need not exist yet.

    Raises:
        InputError: A complete line of the file is not a cache record this pmc reads.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._answers: dict[CacheKey, LlmAnswer] = {}
        if path.exists():
            self._load()

    def __len__(self) -> int:
        return len(self._answers)

    def __contains__(self, key: object) -> bool:
        return key in self._answers

    def get(self, key: CacheKey) -> LlmAnswer | None:
        """The stored answer for ``key``, or ``None`` when it was never asked.

        Args:
            key: The question's key.
        """
        return self._answers.get(key)

    def put(self, key: CacheKey, answer: LlmAnswer) -> None:
        """Store ``answer`` under ``key``: one appended line, flushed and synced to disk.

        Args:
            key: The question's key.
            answer: The model's answer.
        """
        record = {
            "schema_version": CACHE_SCHEMA_VERSION,
            "key": {
                "item_id": key.item_id,
                "model": key.model,
                "prompt_version": key.prompt_version,
            },
            "model": answer.model,
            "raw": answer.raw,
            "data": answer.data,
        }
        line = json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab+") as handle:
            # After a killed write the file ends mid-line: start on a fresh line.
            end = handle.seek(0, os.SEEK_END)
            if end > 0:
                handle.seek(end - 1)
                if handle.read(1) != b"\n":
                    line = "\n" + line
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        self._answers[key] = answer

    def _load(self) -> None:
        skipped = 0
        text = self.path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                skipped += 1  # a write cut off by a killed process
                continue
            key, answer = self._parse(record, number)
            self._answers[key] = answer
        if skipped:
            log.warning(
                "%s: skipped %d cut-off line(s); those items will be asked again",
                self.path,
                skipped,
            )

    def _parse(self, record: Any, number: int) -> tuple[CacheKey, LlmAnswer]:
        where = f"line {number}"
        if not isinstance(record, dict):
            raise InputError(self.path, "not a cache record", where)
        try:
            schema_version(record, CACHE_SCHEMA_VERSION, "cache line")
            key, data = record["key"], record["data"]
            if not isinstance(data, dict):
                raise TypeError("data is not an object")
            return (
                CacheKey(str(key["item_id"]), str(key["model"]), str(key["prompt_version"])),
                LlmAnswer(model=str(record["model"]), raw=str(record["raw"]), data=data),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(self.path, f"not a cache record ({exc})", where) from None


def cached_complete(
    client: LlmClient,
    cache: JudgeCache,
    item_id: str,
    prompt_version: str,
    request: LlmRequest,
) -> LlmAnswer:
    """The cached answer for this item, model and prompt version; asks the model only on a miss.

    A rerun over the same items therefore asks nothing again; a new prompt version or another
    model asks afresh.

    Args:
        client: The model to ask on a miss; its ``name`` is part of the key.
        cache: Where answers are kept.
        item_id: The item asked about.
        prompt_version: The version of the prompt behind ``request``.
        request: The question, sent only on a miss.

    Raises:
        LlmError: Asking failed; nothing is stored.
    """
    key = CacheKey(item_id, client.name, prompt_version)
    answer = cache.get(key)
    if answer is None:
        answer = client.complete_json(request)
        cache.put(key, answer)
    return answer
