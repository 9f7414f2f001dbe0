"""The persistent answer cache: asks once, survives reopening and a killed write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pmc.errors import InputError
from pmc.llm import (
    CacheKey,
    JudgeCache,
    LlmAnswer,
    LlmError,
    LlmRequest,
    ScriptedLlm,
    cached_complete,
)

REQUEST = LlmRequest(system="Answer in JSON.", user="Is this a question?")


def counting() -> ScriptedLlm:
    return ScriptedLlm(lambda request: {"user": request.user}, model="judge")


def test_a_second_ask_makes_no_call(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.jsonl")
    client = counting()

    first = cached_complete(client, cache, "item-1", "v1", REQUEST)
    second = cached_complete(client, cache, "item-1", "v1", REQUEST)

    assert client.calls == 1
    assert second == first
    assert first.data == {"user": REQUEST.user}


def test_a_new_prompt_version_item_or_model_asks_again(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.jsonl")
    client = counting()

    cached_complete(client, cache, "item-1", "v1", REQUEST)
    cached_complete(client, cache, "item-1", "v2", REQUEST)
    cached_complete(client, cache, "item-2", "v1", REQUEST)
    other = ScriptedLlm(model="other-judge")
    cached_complete(other, cache, "item-1", "v1", REQUEST)

    assert (client.calls, other.calls) == (3, 1)
    assert len(cache) == 4


def test_answers_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "cache.jsonl"
    cached_complete(counting(), JudgeCache(path), "item-1", "v1", REQUEST)

    reopened = JudgeCache(path)
    rerun = counting()
    answer = cached_complete(rerun, reopened, "item-1", "v1", REQUEST)

    assert rerun.calls == 0
    assert answer == LlmAnswer(
        model="judge", raw=json.dumps({"user": REQUEST.user}), data={"user": REQUEST.user}
    )


def test_each_line_holds_the_key_and_the_answer(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.jsonl")
    cache.put(CacheKey("item-1", "openai:gpt-4o", "v1"), LlmAnswer("gpt-4o-1", "{}", {}))

    [line] = cache.path.read_text(encoding="utf-8").splitlines()
    assert json.loads(line) == {
        "schema_version": 1,
        "key": {"item_id": "item-1", "model": "openai:gpt-4o", "prompt_version": "v1"},
        "model": "gpt-4o-1",
        "raw": "{}",
        "data": {},
    }


def test_a_cut_off_last_line_is_ignored_and_the_next_write_starts_fresh(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.jsonl"
    client = counting()
    cache = JudgeCache(path)
    cached_complete(client, cache, "item-1", "v1", REQUEST)
    cached_complete(client, cache, "item-2", "v1", REQUEST)
    whole = path.read_bytes()
    second_line = whole.splitlines(keepends=True)[1]
    path.write_bytes(whole + second_line[: len(second_line) // 2])  # a killed third write

    reopened = JudgeCache(path)
    assert len(reopened) == 2
    cached_complete(client, reopened, "item-3", "v1", REQUEST)
    assert client.calls == 3

    again = JudgeCache(path)
    assert len(again) == 3
    assert again.get(CacheKey("item-3", "scripted:judge", "v1")) is not None


def test_the_last_line_for_a_key_wins(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    key = CacheKey("item-1", "scripted:judge", "v1")
    cache = JudgeCache(path)
    cache.put(key, LlmAnswer("judge", '{"n": 1}', {"n": 1}))
    cache.put(key, LlmAnswer("judge", '{"n": 2}', {"n": 2}))

    stored = JudgeCache(path).get(key)

    assert stored is not None
    assert stored.data == {"n": 2}
    assert cache.get(key) == stored


def test_a_failed_ask_stores_nothing(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.jsonl")

    with pytest.raises(LlmError):
        cached_complete(ScriptedLlm(["not json"]), cache, "item-1", "v1", REQUEST)

    assert len(cache) == 0
    assert not cache.path.exists()


def test_a_complete_line_from_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cache.jsonl"
    JudgeCache(path).put(CacheKey("a", "m", "v1"), LlmAnswer("m", "{}", {}))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"schema_version": 99, "key": {}}) + "\n")

    with pytest.raises(InputError, match=r"cache\.jsonl: line 2: .*schema version 99"):
        JudgeCache(path)


def test_a_missing_file_is_an_empty_cache(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "none.jsonl")

    assert len(cache) == 0
    assert cache.get(CacheKey("a", "m", "v1")) is None
    assert CacheKey("a", "m", "v1") not in cache
