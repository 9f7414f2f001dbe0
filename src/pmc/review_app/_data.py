"""What the review app shows and records: windows, conversations, decisions and edits as JSON.

Everything is read from the working directory on each request, so a decision made in another
tab, or a label changed by a rerun of ``pmc labels``, shows at the next reload. A window's
decision is checked against its label as the labels file holds it now, not as ``pmc points``
saw it: that is what makes a decision stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pmc.corpus import Channel, Conversation, conversation_paths, read_conversation
from pmc.errors import PmcError
from pmc.labels import Label, LabelKind, Labels, labels_dir, read_labels
from pmc.points import Point, points_dir, read_points, read_windows
from pmc.review import (
    Decision,
    EditConflict,
    Entry,
    Reason,
    Target,
    Window,
    append,
    apply_edit,
    current_hashes,
    human_label,
    is_stale,
    labels_sha256,
    latest_window_decisions,
    now_utc,
    read_human_labels,
    read_log,
    start_from,
    write_human_labels,
)

BEFORE_BOUNDARY_S = 5.0
"""The window's player starts this long before the boundary: enough to hear the turn build."""
AFTER_CONTEXT_S = 1.0
"""... and runs this long past the reply (turn end) or the resumed speech (pause)."""


class BadRequest(PmcError):
    """A request the app cannot act on (HTTP 400); the message says why."""


class NotFound(PmcError):
    """A window, conversation or file that is not there (HTTP 404)."""


class Conflict(PmcError):
    """A decision on a label that changed since it was shown (HTTP 409)."""


def _label_json(label: Label) -> dict[str, Any]:
    return {**label.to_dict(), "sha256": label.content_sha256()}


def _word_json(speaker: Channel, text: str, start: float, end: float) -> dict[str, Any]:
    return {"speaker": speaker.value, "text": text, "start_conv_s": start, "end_conv_s": end}


@dataclass(frozen=True)
class Clip:
    """The stretch of a conversation a window's player plays, and who is on which side."""

    conversation_id: str
    start_conv_s: float
    end_conv_s: float
    left: Channel


class ReviewData:
    """One reviewer's view of a working directory.

    Args:
        workdir: The working directory (corpus, labels, points; writes ``review/``).
        reviewer: Whose decisions are shown and recorded.
        candidates: List every window ``pmc points`` left before its draw, not only the drawn.
    """

    def __init__(self, workdir: Path, reviewer: str, candidates: bool = False) -> None:
        self.workdir = workdir
        self.reviewer = reviewer
        self.candidates = candidates
        listed = [w for w in read_windows(workdir) if candidates or w.drawn]
        # In turn: conversation by conversation, boundary by boundary.
        self.windows = sorted(listed, key=lambda w: (w.conversation_id, w.boundary_conv_s, w.kind))
        self._by_id = {w.window_id: w for w in self.windows}

    @cached_property
    def conversations(self) -> dict[str, Conversation]:
        """The corpus, by id (read once: the corpus does not change under a review)."""
        found = {}
        for path in conversation_paths(self.workdir):
            conversation = read_conversation(self.workdir, path)
            found[conversation.conversation_id] = conversation
        return found

    @cached_property
    def points(self) -> dict[str, Point]:
        """The drawn points, by id (their cuts can be played too)."""
        try:
            return {p.point_id: p for p in read_points(self.workdir)}
        except PmcError:
            return {}

    def engine(self, conversation_id: str) -> Labels:
        """The engine's labels of a conversation as they are now."""
        path = labels_dir(self.workdir) / f"{conversation_id}.json"
        if not path.exists():
            raise NotFound(f"no labels of conversation {conversation_id!r}")
        return read_labels(path)

    def window(self, window_id: str) -> Window:
        """A listed window."""
        window = self._by_id.get(window_id)
        if window is None:
            raise NotFound(f"no window {window_id!r}")
        return window

    def conversation(self, conversation_id: str) -> Conversation:
        """A conversation of the corpus."""
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        return conversation

    def current(self) -> dict[str, str]:
        """Each listed window's label content hash as the labels files hold it now."""
        return current_hashes(self.workdir, self.windows)

    # -- window mode ---------------------------------------------------------------------------

    def _status(
        self, window: Window, current: dict[str, str], mine: Entry | None
    ) -> dict[str, Any]:
        status = "undecided"
        if mine is not None:
            if is_stale(mine, current.get(window.window_id)):
                status = "stale"
            else:
                status = "accepted" if mine.decision is Decision.ACCEPT else "rejected"
        return {
            **window.to_dict(),
            "status": status,
            "reason": None if mine is None or mine.reason is None else mine.reason.value,
            "labels_changed": current.get(window.window_id) != window.label_sha256,
        }

    def state(self) -> dict[str, Any]:
        """Everything the app's first screen needs."""
        log = read_log(self.workdir, self.reviewer)
        latest = latest_window_decisions(log.entries)
        current = self.current()
        conversations = []
        for cid, conversation in sorted(self.conversations.items()):
            started = read_human_labels(self.workdir, self.reviewer, cid) is not None
            conversations.append(
                {"conversation_id": cid, "duration_s": conversation.duration_s, "started": started}
            )
        return {
            "reviewer": self.reviewer,
            "candidates": self.candidates,
            "reasons": [r.value for r in Reason],
            "label_kinds": [k.value for k in LabelKind],
            "windows": [
                self._status(w, current, latest.get((self.reviewer, w.window_id)))
                for w in self.windows
            ],
            "conversations": conversations,
            "problems": log.skipped,
        }

    def clip(self, window: Window) -> Clip:
        """The stretch a window's player plays: the person on the left."""
        duration = self.conversation(window.conversation_id).duration_s
        start = max(0.0, window.boundary_conv_s - BEFORE_BOUNDARY_S)
        end = min(duration, window.context_end_conv_s + AFTER_CONTEXT_S)
        return Clip(window.conversation_id, start, end, window.speaker)

    def _words(self, conversation_id: str, labels: Labels, start: float, end: float) -> list[Any]:
        conversation = self.conversation(conversation_id)
        words = []
        for speaker in conversation.speakers:
            filled = labels.filled_words.get(speaker.channel, ())
            for w in (*speaker.words, *filled):
                if w.end_conv_s > start and w.start_conv_s < end:
                    words.append(_word_json(speaker.channel, w.text, w.start_conv_s, w.end_conv_s))
        return sorted(words, key=lambda x: (x["start_conv_s"], x["speaker"]))

    def window_detail(self, window_id: str) -> dict[str, Any]:
        """One window: its clip, words, the engine's labels around it, and my decision."""
        window = self.window(window_id)
        clip = self.clip(window)
        engine = self.engine(window.conversation_id)
        # This window's label as the labels file holds it now (read once, for labels too).
        now = {x.id: x.content_sha256() for x in engine.labels if x.id == window.label_id}
        current = {window_id: now[window.label_id]} if now else {}
        mine = latest_window_decisions(read_log(self.workdir, self.reviewer).entries).get(
            (self.reviewer, window_id)
        )
        decision = None
        if mine is not None:
            decision = {
                "decision": mine.decision.value,
                "reason": None if mine.reason is None else mine.reason.value,
                "note": mine.note,
                "at_utc": mine.at_utc,
                "stale": is_stale(mine, current.get(window_id)),
            }
        point = self.points.get(window_id)
        cuts = {}
        if point is not None:
            base = points_dir(self.workdir).relative_to(self.workdir).as_posix()
            cuts = {k: f"/files/{base}/{v}" for k, v in sorted(point.cuts.items())}
            cuts = {k: v for k, v in cuts.items() if v.endswith(".wav")}
        labels = [
            _label_json(x)
            for x in engine.labels
            if x.end_conv_s >= clip.start_conv_s and x.start_conv_s <= clip.end_conv_s
        ]
        return {
            "window": self._status(window, current, mine),
            "clip": {
                "start_conv_s": clip.start_conv_s,
                "end_conv_s": clip.end_conv_s,
                "audio": f"/audio/window/{window_id}.wav",
            },
            "speakers": {"left": window.speaker.value, "right": window.speaker.other.value},
            "words": self._words(
                window.conversation_id, engine, clip.start_conv_s, clip.end_conv_s
            ),
            "labels": labels,
            "decision": decision,
            "cuts": cuts,
        }

    def decide(self, window_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Record an accept or a reject (with its reason) on a window."""
        window = self.window(window_id)
        try:
            decision = Decision(str(body.get("decision")))
            reason = Reason(body["reason"]) if body.get("reason") is not None else None
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        if decision not in (Decision.ACCEPT, Decision.REJECT):
            raise BadRequest(f"a window is accepted or rejected, not {decision.value!r}")
        if (decision is Decision.REJECT) != (reason is not None):
            raise BadRequest("a rejection needs a reason from the list, and an acceptance none")
        sha = current_hashes(self.workdir, [window]).get(window_id)
        if sha is None:
            raise Conflict(
                f"window {window_id}: its label {window.label_id} is no longer in the labels; "
                "rerun `pmc points`"
            )
        entry = Entry(
            reviewer=self.reviewer,
            target=Target.WINDOW,
            target_id=window_id,
            conversation_id=window.conversation_id,
            label_id=window.label_id,
            label_sha256=sha,
            decision=decision,
            at_utc=now_utc(),
            reason=reason,
            note=str(body.get("note") or "")[:2000],
        )
        append(self.workdir, entry)
        return self.window_detail(window_id)

    # -- conversation mode ---------------------------------------------------------------------

    def conversation_detail(self, conversation_id: str) -> dict[str, Any]:
        """A whole conversation: words, and my labels (the engine's until I change one)."""
        conversation = self.conversation(conversation_id)
        engine = self.engine(conversation_id)
        mine = read_human_labels(self.workdir, self.reviewer, conversation_id)
        shown = mine if mine is not None else engine
        base = None if mine is None else mine.settings.get("engine_labels_sha256")
        edits = sum(
            1
            for e in read_log(self.workdir, self.reviewer).entries
            if e.target is Target.LABEL and e.conversation_id == conversation_id
        )
        return {
            "conversation_id": conversation_id,
            "duration_s": conversation.duration_s,
            "audio": f"/audio/conversation/{conversation_id}.wav",
            "speakers": {"left": Channel.A.value, "right": Channel.B.value},
            "words": self._words(conversation_id, engine, 0.0, conversation.duration_s),
            "labels": [_label_json(x) for x in shown.labels],
            "started": mine is not None,
            "engine_changed": base is not None and base != labels_sha256(engine),
            "edits": edits,
        }

    def edit(self, conversation_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply one edit to my labels of a conversation, and log it."""
        conversation = self.conversation(conversation_id)
        try:
            decision = Decision(str(body.get("decision")))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        if decision not in (Decision.MOVE, Decision.RELABEL, Decision.ADD, Decision.DELETE):
            raise BadRequest(f"a label is moved, relabelled, added or deleted, not {decision}")
        engine = self.engine(conversation_id)
        mine = read_human_labels(self.workdir, self.reviewer, conversation_id)
        labels = mine if mine is not None else start_from(engine, self.reviewer)
        after = None if decision is Decision.DELETE else self._new_label(conversation, body)
        target = str(body.get("label_id") or "")
        seen = str(body.get("label_sha256") or "")
        try:
            changed = apply_edit(labels, decision, target, seen, after)
        except EditConflict as exc:
            raise Conflict(str(exc)) from None
        entry = Entry(
            reviewer=self.reviewer,
            target=Target.LABEL,
            target_id=after.id if decision is Decision.ADD and after is not None else target,
            conversation_id=conversation_id,
            label_id=after.id if decision is Decision.ADD and after is not None else target,
            label_sha256="" if decision is Decision.ADD else seen,
            decision=decision,
            at_utc=now_utc(),
            note=str(body.get("note") or "")[:2000],
            label=None if after is None else after.to_dict(),
        )
        write_human_labels(self.workdir, self.reviewer, changed)
        append(self.workdir, entry)
        detail = self.conversation_detail(conversation_id)
        detail["label"] = None if after is None else _label_json(after)
        return detail

    def _new_label(self, conversation: Conversation, body: dict[str, Any]) -> Label:
        data = body.get("label")
        if not isinstance(data, dict):
            raise BadRequest("the edit needs the label it makes: kind, speaker, start, end")
        try:
            kind = LabelKind(data["kind"])
            speaker = Channel(data["speaker"]) if data.get("speaker") else None
            start, end = float(data["start_conv_s"]), float(data["end_conv_s"])
        except (KeyError, ValueError, TypeError) as exc:
            raise BadRequest(f"not a label: {exc}") from None
        if not 0.0 <= start <= conversation.duration_s or not 0.0 <= end <= conversation.duration_s:
            raise BadRequest(
                f"a label lies within the conversation (0 to {conversation.duration_s:.3f} s)"
            )
        text = str(data.get("text") or "")[:2000]
        try:
            return human_label(conversation.conversation_id, kind, speaker, start, end, text)
        except PmcError as exc:
            raise BadRequest(str(exc)) from None
