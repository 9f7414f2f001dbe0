"""``python -m pmc.testing.duplex_server SPEC``: a :class:`ListeningMoshi` in a child process.

See :func:`pmc.testing.duplex_server.listening_moshi_process`, which starts it.
"""

from pmc.testing.duplex_server._process import main

main()
