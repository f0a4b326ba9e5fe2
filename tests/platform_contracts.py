"""Each platform's result as that platform reads it: the contract schema (in ``contracts/``,
written from the platform's own documentation), how to read the result out of the format's
output, and the fraction of the points the platform takes from it."""

from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

CONTRACTS = Path(__file__).parent / "contracts"


def contract(name: str) -> dict[str, Any]:
    return json.loads((CONTRACTS / name).read_text())


def base64_json(output: str) -> Any:
    return json.loads(base64.b64decode(output))


def _last_lines(output: str) -> list[str]:
    return output.rstrip("\n").splitlines()


def autolab_result(output: str) -> dict[str, Any]:
    """Autolab: the autoresult (last line) and the semantic presentation (the line before)."""
    lines = _last_lines(output)
    read = {"autoresult": json.loads(lines[-1])}
    if len(lines) > 1 and lines[-2].startswith('{"_presentation"'):
        read["presentation"] = json.loads(lines[-2])
    return read


def last_line_json(output: str) -> Any:
    return json.loads(_last_lines(output)[-1])


def xml_tree(output: str) -> dict[str, Any]:
    def node(element: ET.Element) -> dict[str, Any]:
        return {"tag": element.tag, "attributes": dict(element.attrib),
                "text": element.text or "", "children": [node(child) for child in element]}

    return node(ET.fromstring(output))


class Contract(NamedTuple):
    schema: str
    read: Callable[[str], Any]
    #: the fraction of the points the platform records, from what ``read`` returns and the
    #: report's maximum (Autolab and GitHub record points, not fractions)
    fraction: Callable[[Any, float], Fraction]


def _exact(value: float) -> Fraction:
    return Fraction(repr(float(value)))


def _github(result: dict[str, Any], max_score: float) -> Fraction:
    sent = sum(Fraction(t["score"]).limit_denominator(10_000) for t in result["tests"])
    return sent / _exact(max_score)


def _junit(tree: dict[str, Any], max_score: float) -> Fraction:
    suite = tree["children"][0]
    properties = next(c for c in suite["children"] if c["tag"] == "properties")
    values = {p["attributes"]["name"]: p["attributes"]["value"] for p in properties["children"]}
    return _exact(float(values["score"])) / _exact(float(values["max_score"]))


def _codegrade(points: dict[str, Any], max_score: float) -> Fraction:
    return Fraction(points["points"])


#: every platform of ``grader.platforms.PLATFORMS``, by name
PLATFORM_CONTRACTS: dict[str, Contract] = {
    "gradescope": Contract("gradescope_results.schema.json", json.loads,
                           lambda r, m: _exact(r["score"]) / _exact(m)),
    "github": Contract("classroom_result.schema.json", base64_json, _github),
    "prairielearn": Contract("prairielearn_results.schema.json", json.loads,
                             lambda r, m: _exact(r.get("score", 0.0))),
    "autolab": Contract("autolab_autoresult.schema.json", autolab_result,
                        lambda r, m: sum((_exact(v) for v in r["autoresult"]["scores"].values()),
                                         Fraction(0)) / _exact(m)),
    "coderunner": Contract("coderunner_outcome.schema.json", json.loads,
                           lambda r, m: _exact(r["fraction"])),
    "codegrade": Contract("codegrade_points.schema.json", last_line_json, _codegrade),
    "coursera": Contract("coursera_feedback.schema.json", json.loads,
                         lambda r, m: _exact(r["fractionalScore"])),
    "junit": Contract("junit_results.schema.json", xml_tree, _junit),
}
