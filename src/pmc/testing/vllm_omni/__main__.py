"""``python -m pmc.testing.vllm_omni SPEC``: the fake in a process of its own."""

from pmc.testing.vllm_omni._fake import main

main()
