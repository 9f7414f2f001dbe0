"""``python -m pmc.testing.hosted SPEC``: a fake hosted server in a child process.

See :func:`pmc.testing.hosted.fake_process`, which starts it.
"""

from pmc.testing.hosted._process import main

main()
