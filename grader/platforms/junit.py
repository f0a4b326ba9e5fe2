"""JUnit XML, the test report CI systems read (GitLab, Jenkins, Azure, GitHub checks): one
``testcase`` per check, a failed check carrying a ``failure`` with the check's message, a
submission that could not be graded one ``error``; the score and its maximum as the suite's
``properties``. Built with ``xml.etree`` (markup escaped) from
``grader.render.visible.student_view``; characters XML 1.0 cannot hold are replaced.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from grader.render.formats import Format, Page
from grader.render.outcome import check_name, fraction, headline
from grader.render.visible import student_view

#: what XML 1.0 cannot carry even escaped (control characters, lone surrogates, U+FFFE/F)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _points(value: float) -> str:
    return f"{float(value):g}"


def tree(report: dict[str, Any]) -> ET.Element:
    view = student_view(report)
    assignment = xml_text(view["assignment"])
    failures = sum(not c["passed"] for c in view["checks"])
    errors = 0 if report["status"] == "graded" else 1
    tests = len(view["checks"]) + errors
    duration = f"{float(view.get('metadata', {}).get('duration_seconds', 0.0)):.3f}"
    counts = {"tests": str(tests), "failures": str(failures), "errors": str(errors)}
    suites = ET.Element("testsuites", {"name": "attention-grader", **counts, "time": duration})
    suite = ET.SubElement(suites, "testsuite", {"name": assignment, **counts, "skipped": "0",
                                                "time": duration})
    properties = ET.SubElement(suite, "properties")
    for name, value in (("score", _points(report["score"])),
                        ("max_score", _points(report["max_score"])),
                        ("fraction", repr(fraction(report))),
                        ("misconceptions", " ".join(m["id"] for m in view["misconceptions"]))):
        ET.SubElement(properties, "property", {"name": name, "value": xml_text(value)})
    for check in view["checks"]:
        case = ET.SubElement(suite, "testcase", {
            "name": xml_text(check_name(check)), "classname": f"attention-grader.{assignment}",
            "time": "0"})
        if not check["passed"]:
            failure = ET.SubElement(case, "failure", {
                "message": xml_text(f"{_points(check['points'])} / "
                                    f"{_points(check['max_points'])}: {check['message']}"),
                "type": xml_text(check["category"])})
            failure.text = xml_text(check["message"])
    if errors:
        case = ET.SubElement(suite, "testcase", {
            "name": "submission could be graded", "classname": f"attention-grader.{assignment}",
            "time": "0"})
        error = ET.SubElement(case, "error", {
            "message": xml_text(headline(view)),
            "type": xml_text(" ".join(e["kind"] for e in view["errors"]) or "error")})
        error.text = xml_text("\n\n".join(f"{e['kind']}: {e['message']}" for e in view["errors"]))
    return suites


def render(report: dict[str, Any]) -> str:
    element = tree(report)
    ET.indent(element)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ET.tostring(element, encoding="unicode") + "\n")


def student_pages(output: str) -> list[Page]:
    """What a CI page shows of a report: each failure's and error's message and text."""
    root = ET.fromstring(output)
    pages = []
    for node in root.iter():
        if node.tag in ("failure", "error"):
            pages += [Page("text", node.get("message", "")), Page("text", node.text or "")]
    return pages


FORMAT = Format("junit", render, student_pages, keeps_hidden_tests_secret=True)
