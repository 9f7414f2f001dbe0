"""Every adapter says whether its wire carries the system's words (``SENDS_TEXT``).

The protocol counts a reply by its words where the wire carries them and by speech alone where
it does not (docs/wire-formats.md); an adapter that claimed words its wire never carries would
stop every rollout ``no_reply`` although the system replied (issue 38). Each bundled adapter is
listed here with what its wire carries, so a new one must be placed; the rollouts that show it
(a reply stops ``replied``) are in each adapter's end-to-end tests: test_hosted_e2e.py (the
three hosted dialects), test_known_timing.py (Moshi's protocol), test_agent_wires.py and
test_pipecat_bot.py (Twilio, Pipecat's protobuf), test_pcm_agent.py (raw PCM),
test_voicebench.py, test_openai_compatible.py, test_vllm_omni.py and test_livekit.py, and
tests/harness/test_stage.py (the local person).
"""

from __future__ import annotations

from pmc.systems import ADAPTERS

CARRIES_WORDS = {
    "always-speak": True,  # its monologue's text with its audio
    "endpointer-cascade": True,  # the reply's words with Piper's audio
    "gemini-live": True,  # output transcription
    "grok-voice": True,  # output transcript deltas
    "livekit-console": False,  # audio frames; transcripts come as events, where the agent has them
    "llm-text": True,  # the model's answer with Piper's audio
    "loopback-pcm": False,  # PCM16 and JSON signals only
    "moshi-preloaded": True,  # text tokens (message kind 2)
    "moshi-stock": True,  # text tokens (message kind 2)
    "never-speak": True,  # says nothing at all: the default, never read
    "openai-compatible": False,  # transcript deltas where a server sends them, often none
    "openai-realtime": True,  # response audio transcript deltas
    "person": True,  # the person's transcript with the recording
    "pipecat-smart-turn": True,  # the cascade's reply words
    "pipecat-websocket": False,  # Pipecat's output transport forwards audio frames only
    "twilio-media-streams": False,  # a phone line: mu-law audio and marks
    "vllm-omni-duplex": False,  # transcript deltas where the model sends them
    "voicebench-ws": False,  # PCM16, with transcripts an agent may or may not send
}


def test_each_bundled_adapter_says_what_its_wire_carries() -> None:
    bundled = {
        name: ADAPTERS.get(name)
        for name in ADAPTERS.known().split(", ")
        if getattr(ADAPTERS.get(name), "__module__", "").startswith("pmc.systems.")
    }
    assert sorted(bundled) == sorted(CARRIES_WORDS)
    said = {name: getattr(factory, "SENDS_TEXT", None) for name, factory in bundled.items()}
    assert said == CARRIES_WORDS
