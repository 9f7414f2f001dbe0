"""``python -m pmc.testing.duplex SPEC``: a :class:`ListeningMoshi` in a child process.

See :func:`pmc.testing.duplex.listening_moshi_process`, which starts it.
"""

from pmc.testing.duplex._process import main

main()
