"""The checks as JUnit XML, the report format CI systems read (one test case per check)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from pmc.check._evaluate import CheckResult


def junit_xml(results: Sequence[CheckResult], suite: str) -> str:
    """One ``testsuite`` named ``suite``; a ``testcase`` per result, a ``failure`` where it failed.

    A case's class is ``pmc.check.<system>[.<kind>]`` and its name the check and what it asks,
    so a CI page groups the cases by system; every case carries its message with the numbers.
    """
    failures = sum(r.outcome.fails for r in results)
    counts = {"tests": str(len(results)), "failures": str(failures), "errors": "0"}
    root = ET.Element("testsuites", {"name": "pmc check", **counts})
    cases = ET.SubElement(root, "testsuite", {"name": suite, **counts, "skipped": "0"})
    for r in results:
        classname = f"pmc.check.{r.system}" + ("" if r.kind is None else f".{r.kind.value}")
        case = ET.SubElement(
            cases, "testcase", {"classname": classname, "name": f"{r.check}: {r.name}"}
        )
        if r.outcome.fails:
            failure = ET.SubElement(case, "failure", {"message": r.message, "type": r.outcome})
            failure.text = r.message
        else:
            ET.SubElement(case, "system-out").text = r.message
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
