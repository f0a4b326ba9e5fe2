"""The class report: what a class misunderstood, for the instructor and for office hours.

``class_statistics`` (pure: summary rows in, numbers out) feeds two renderings: ``summary.md``
and a self-contained ``report.html`` whose charts are inline SVG, so it opens offline, in any
browser, and still reads as tables where SVG is not shown.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any


def _terms(assignment: str) -> frozenset[str]:
    """The course's conventions, in which its misconceptions are told (as in its reports)."""
    from grader.core.assignments import get
    from grader.registry import exists
    from grader.registry import get as info_of

    # (an assignment made of parts: each part's section is told in its own terms)
    if not exists(assignment) or info_of(assignment).multi_part:
        return frozenset()
    return get(assignment).wording_terms()


def class_statistics(rows: Sequence[dict[str, Any]], assignment: str) -> dict[str, Any]:
    from grader.registry import rubric
    from reference.catalogue import BY_ID, wording

    scores = [float(r["score"]) for r in rows]
    maximum = float(rows[0]["max_score"]) if rows else float(rubric(assignment)["max_score"])
    graded = [r for r in rows if r["status"] == "graded"]
    misconceptions = []
    counts = Counter(m for r in rows for m in r["misconceptions"])
    terms = _terms(assignment)
    for mid, count in counts.most_common():
        row = BY_ID.get(mid)
        told = wording(mid, terms) if row else None
        misconceptions.append({
            "id": mid,
            "title": told.title if told else mid,
            "explanation": told.explanation if told else "",
            "question_bank": list(row.question_bank) if row else [],
            "students": sorted(r["student"] for r in rows if mid in r["misconceptions"]),
            "count": count,
            "share": count / len(rows) if rows else 0.0,
        })
    checks = []
    for spec in rubric(assignment)["checks"]:
        # a check the course's interface left out was never run: it has no pass rate
        left_out = {r["student"]: n["why"] for r in graded for n in r.get("not_probed", [])
                    if n["check"] == spec["id"]}
        run = [r for r in graded if r["student"] not in left_out]
        failed = sum(spec["id"] in r.get("failed_checks", []) for r in run)
        checks.append({"id": spec["id"], "category": spec["category"],
                       "pass_rate": (len(run) - failed) / len(run) if run else 0.0,
                       "run": len(run), "not_run_why": sorted(set(left_out.values()))})
    bins = [0] * 10
    for score in scores:
        if maximum > 0:
            bins[min(9, int(10 * score / maximum))] += 1
    return {
        "assignment": assignment,
        "submissions": len(rows),
        "graded": len(graded),
        "max_score": maximum,
        "mean": statistics.fmean(scores) if scores else 0.0,
        "median": statistics.median(scores) if scores else 0.0,
        "full_marks": sum(s >= maximum for s in scores),
        "score_bins": bins,
        "misconceptions": misconceptions,
        "checks": checks,
        "errors": dict(Counter(e for r in rows for e in r["errors"]).most_common()),
        "no_misconception_but_wrong": sorted(r["student"] for r in graded
                                             if not r["misconceptions"] and
                                             float(r["score"]) < maximum),
    }


def _ran(check: dict[str, Any]) -> bool:
    """Whether a check was run for anyone (one the course's interface leaves out is not)."""
    return bool(check.get("run", 1)) or not check.get("not_run_why")


_CODE = re.compile(r"`([^`]+)`")


def _prose(text: str) -> str:
    """Catalogue text as HTML: escaped, its `code` spans shown as code."""
    return _CODE.sub(r"<code>\1</code>", escape(text))


def _plain(text: str) -> str:
    """Catalogue text where no markup shows (a chart's tooltip): without the code marks."""
    return _CODE.sub(r"\1", text)


def _students(count: int) -> str:
    return f"{count} student" if count == 1 else f"{count} students"


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def markdown(stats: dict[str, Any]) -> str:
    from grader.render.markdown import inline  # student names are shown, never applied

    top = stats["max_score"]
    lines = [
        f"# Class report: `{stats['assignment']}`", "",
        f"{stats['submissions']} submissions, {stats['graded']} graded. Mean score "
        f"{stats['mean']:.2f} / {top:g}, median {stats['median']:g}; "
        f"{stats['full_marks']} with full marks.", "",
        "## Score distribution", "", "| score | students |", "|---|---|",
    ]
    for index, count in enumerate(stats["score_bins"]):
        low, high = top * index / 10, top * (index + 1) / 10
        lines.append(f"| {low:g}-{high:g}{'' if index < 9 else ' (incl.)'} | {count} |")
    lines += ["", "## Misconceptions", ""]
    if not stats["misconceptions"]:
        lines += ["None named.", ""]
    for item in stats["misconceptions"]:
        bank = ", ".join(item["question_bank"]) or "-"
        lines += [f"### `{item['id']}`: {item['title']}", "",
                  f"{_students(item['count'])} ({_percent(item['share'])}). Question bank: {bank}.",
                  "", item["explanation"], "",
                  "Students: " + ", ".join(map(inline, item["students"])), ""]
    if stats["no_misconception_but_wrong"]:
        lines += ["Lost points without a catalogued misconception (read their reports): "
                  + ", ".join(map(inline, stats["no_misconception_but_wrong"])), ""]
    lines += ["## Checks: pass rate", "", "| check | category | pass rate |", "|---|---|---|"]
    lines += [f"| `{c['id']}` | {c['category']} | "
              f"{_percent(c['pass_rate']) if _ran(c) else 'not run'} |" for c in stats["checks"]]
    why = sorted({w for c in stats["checks"] for w in c.get("not_run_why", [])})
    if why:
        lines += ["", "Not run: left out by the course's interface (" + "; ".join(why)
                  + "), so not scored."]
    lines += ["", "## Errors", ""]
    lines += ([f"- `{kind}`: {count}" for kind, count in stats["errors"].items()]
              or ["None."])
    return "\n".join(lines) + "\n"


def _bars(items: Sequence[tuple[str, float, str]], maximum: float, unit: str = "") -> str:
    """A horizontal bar chart as inline SVG: (label, value, tooltip) per bar."""
    height, label_width, bar_width = 22, 230, 360
    parts = [f'<svg role="img" width="{label_width + bar_width + 80}" '
             f'height="{height * len(items) + 6}" xmlns="http://www.w3.org/2000/svg">']
    for index, (label, value, tip) in enumerate(items):
        y = index * height + 4
        width = 0 if maximum <= 0 else bar_width * value / maximum
        parts.append(
            f'<g><title>{escape(tip)}</title>'
            f'<text x="{label_width - 6}" y="{y + 14}" text-anchor="end" font-size="12">'
            f'{escape(label)}</text>'
            f'<rect x="{label_width}" y="{y}" width="{width:.1f}" height="{height - 6}" '
            f'fill="#4c78a8"/>'
            f'<text x="{label_width + width + 4:.1f}" y="{y + 14}" font-size="12">'
            f'{value:g}{unit}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def html(stats: dict[str, Any]) -> str:
    top = stats["max_score"]
    bins = [(f"{top * i / 10:g}-{top * (i + 1) / 10:g}", float(n), f"{n} students")
            for i, n in enumerate(stats["score_bins"])]
    mis = [(m["id"], float(m["count"]), f"{_plain(m['title'])}: {', '.join(m['students'])}")
           for m in stats["misconceptions"]]
    checks = [(c["id"], round(100 * c["pass_rate"]), f"{c['category']}")
              for c in stats["checks"] if _ran(c)]
    not_run = [c for c in stats["checks"] if not _ran(c)]
    why = sorted({w for c in not_run for w in c.get("not_run_why", [])})
    errors = [(kind, float(count), kind) for kind, count in stats["errors"].items()]
    sections = [
        f"<h1>Class report: <code>{escape(stats['assignment'])}</code></h1>",
        f"<p>{stats['submissions']} submissions, {stats['graded']} graded. Mean "
        f"{stats['mean']:.2f} / {top:g}, median {stats['median']:g}, "
        f"{stats['full_marks']} with full marks.</p>",
        "<h2>Score distribution</h2>", _bars(bins, max([b[1] for b in bins] + [1])),
        "<h2>Misconceptions</h2>",
        _bars(mis, max([m[1] for m in mis] + [1])) if mis else "<p>None named.</p>",
    ]
    for item in stats["misconceptions"]:
        bank = ", ".join(item["question_bank"]) or "-"
        sections.append(
            f"<details><summary><code>{escape(item['id'])}</code>: {_prose(item['title'])} "
            f"({_students(item['count'])}, {_percent(item['share'])})</summary>"
            f"<p>{_prose(item['explanation'])}</p><p>Question bank: {escape(bank)}</p>"
            f"<p>Students: {escape(', '.join(item['students']))}</p></details>")
    if stats["no_misconception_but_wrong"]:
        sections.append("<p>Lost points without a catalogued misconception: "
                        + escape(", ".join(stats["no_misconception_but_wrong"])) + "</p>")
    sections += ["<h2>Checks: pass rate</h2>", _bars(checks, 100, "%")]
    if not_run:
        sections.append("<p>Not run (left out by the course's interface: "
                        + escape("; ".join(why)) + "), so not scored: "
                        + ", ".join(f"<code>{escape(c['id'])}</code>" for c in not_run)
                        + ".</p>")
    sections += [
                 "<h2>Errors</h2>",
                 _bars(errors, max([e[1] for e in errors] + [1])) if errors
                 else "<p>None.</p>"]
    body = "\n".join(sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>Class report: {escape(stats['assignment'])}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;"
        "line-height:1.4}details{margin:.4em 0}code{background:#f3f3f3;padding:0 .2em}"
        "</style></head><body>\n" + body + "\n</body></html>\n")


def part_statistics(rows: Sequence[dict[str, Any]], assignment: str) -> list[dict[str, Any]]:
    """A multi-part assignment: each part's statistics, from the parts of the rows (a student
    whose submission could not be run at all counts in every part, with that error); none for
    an assignment of one part."""
    from grader import registry

    info = registry.get(assignment) if registry.exists(assignment) else None
    if info is None or not info.multi_part:
        return []
    stats = []
    for number, (found, _) in enumerate(registry.parts_of(info)):
        part_rows = [{**part, "student": row["student"]}
                     for row in rows for part in row.get("parts", [])[number: number + 1]]
        stats.append(class_statistics(part_rows, registry.reference_of(found)))
    return stats


def _demoted(text: str) -> str:
    """A page's Markdown headings one level down (a part's section inside the class's)."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines())


def write_class_report(rows: Sequence[dict[str, Any]], out_dir: Path, assignment: str) -> None:
    from grader.files import write_atomically

    stats = class_statistics(rows, assignment)
    parts = part_statistics(rows, assignment)
    page, web = markdown(stats), html(stats)
    for number, part in enumerate(parts, 1):  # (each part's misconceptions and checks)
        title = f"Part {number} of {len(parts)}"
        page += f"\n# {title}\n\n" + _demoted(markdown(part))
        body = html(part).split("<body>\n", 1)[1].rsplit("\n</body>", 1)[0]
        web = web.replace("\n</body></html>", f"\n<section><h1>{title}</h1>{body}</section>"
                          "\n</body></html>")
    # (readable as the folder is: by the course's staff, where it is theirs)
    write_atomically(out_dir / "summary.md", page, as_folder=True)
    write_atomically(out_dir / "report.html", web, as_folder=True)
