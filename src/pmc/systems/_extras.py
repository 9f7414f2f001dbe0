"""Whether one of pmc's optional extras is installed, read from pmc's own package metadata."""

from __future__ import annotations

import functools
import importlib.metadata
import re

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


@functools.cache
def extra_installed(extra: str) -> bool:
    """True when every distribution the extra ``pmc[extra]`` names is installed.

    An extra pmc does not declare (or pmc itself not installed as a distribution) is False.
    """
    try:
        requirements = importlib.metadata.requires("pmc") or []
    except importlib.metadata.PackageNotFoundError:
        return False
    names = []
    for requirement in requirements:
        requirement_text, _, marker = requirement.partition(";")
        wanted = _EXTRA.search(marker)
        found = _NAME.match(requirement_text)
        if wanted and wanted.group(1) == extra and found:
            names.append(found.group(1))
    if not names:
        return False
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return False
    return True
