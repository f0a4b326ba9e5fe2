"""The command line (SPEC section 3): arguments in, one call into the API, rendered report out."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from grader import registry
from grader.config import DEFAULT_LIMITS, SEED_VARIABLE, Limits, seed_from_environment
from grader.files import write_atomically
from grader.model import DEFAULT_SEED
from grader.platforms import FORMATS, gradescope

ASSIGNMENT_IDS = list(registry.ids())


class AssignmentType(click.ParamType):
    """An assignment: a built-in or preset ID, or the path of a course's own assignment folder."""

    name = "ASSIGNMENT"

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        if registry.exists(str(value)):
            try:  # a course's folder is read, and checked against the file's schema, now
                registry.get(str(value))
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
            return str(value)
        self.fail(registry.unknown_assignment(str(value)), param, ctx)


ASSIGNMENT = AssignmentType()


def _seed(value: int | None) -> int:
    try:
        return seed_from_environment(value)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def _limits(timeout: float | None, import_timeout: float | None, total_timeout: float | None,
            memory_mb: int | None, unsafe_no_fs_isolation: bool = False) -> Limits:
    changes: dict[str, Any] = {"unsafe_no_fs_isolation": unsafe_no_fs_isolation}
    if timeout is not None:
        changes["call_seconds"] = timeout
    if import_timeout is not None:
        changes["import_seconds"] = import_timeout
    if total_timeout is not None:
        changes["total_seconds"] = total_timeout
    if memory_mb is not None:
        changes["memory_mb"] = memory_mb
    return Limits(**{**DEFAULT_LIMITS.as_dict(), **changes})


#: at most this many files of a submission's folder are checked (``_classmates``)
MAX_CLASSMATES = 2000


def _classmates(submission: Path) -> tuple[str, ...]:
    """The other submissions (``.py``, ``.ipynb``) in the folder of the one graded: where the
    run's own uid is its only file system layer, it is refused if it could read any of them
    (a copier in a class folder every user may read got its neighbour's answers)."""
    from grader.load import has_submission_suffix

    try:
        mine = submission.resolve()
        neighbours = [p for p in mine.parent.iterdir() if p.name != mine.name][:MAX_CLASSMATES]
    except OSError:
        return ()
    return tuple(str(p) for p in neighbours
                 if has_submission_suffix(p) and not p.is_symlink() and p.is_file())


def _submission_suffix(context: click.Context, parameter: click.Parameter, path: Path) -> Path:
    from grader.load import has_submission_suffix

    if not has_submission_suffix(path):
        raise click.BadParameter(
            f"{path.name!r} is neither a .py file nor an .ipynb notebook; only those are run.",
            context, parameter)
    return path


_submission_argument = click.argument(
    "submission", type=click.Path(exists=True, dir_okay=False, readable=True, path_type=Path),
    callback=_submission_suffix)
_assignment_option = click.option(
    "--assignment", "-a", type=ASSIGNMENT, default=None,
    help="Assignment ID; inferred from the functions the submission defines when omitted.")


_unsafe_option = click.option(
    "--unsafe-no-fs-isolation", is_flag=True,
    help="Run submissions even where no filesystem isolation (mount namespace, Landlock, "
         "unprivileged user) exists and they could write the grader's own files. Only for code "
         "you trust.")


def _grading_options(default_format: str) -> Any:
    """The arguments `grade` and `check` share; they differ only in the default format."""
    options = [
        _submission_argument,
        _assignment_option,
        click.option("--format", "-f", "fmt", type=click.Choice(list(FORMATS)),
                     default=default_format, show_default=True, help="Report format."),
        click.option("--seed", type=int, default=None,
                     help=f"Probe seed (default {DEFAULT_SEED}, or ${SEED_VARIABLE}). Another "
                          "seed gives hidden probes with new values."),
        click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, help="Write the report to FILE instead of stdout."),
        click.option("--fail-under", type=float, default=None,
                     help="Exit with status 1 when the score is below SCORE."),
        click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
                     help=f"Seconds per call (default {DEFAULT_LIMITS.call_seconds:g})."),
        click.option("--import-timeout", type=click.FloatRange(min=0.1), default=None,
                     help="Seconds to load the submission (default "
                          f"{DEFAULT_LIMITS.import_seconds:g})."),
        click.option("--total-timeout", type=click.FloatRange(min=0.5), default=None,
                     help=f"Seconds for everything (default {DEFAULT_LIMITS.total_seconds:g})."),
        click.option("--memory-mb", type=click.IntRange(min=256), default=None,
                     help=f"Address-space limit of the child (default {DEFAULT_LIMITS.memory_mb})."),
        _unsafe_option,
    ]

    def decorate(function: Any) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def _grade_and_emit(submission: Path, assignment: str | None, fmt: str, output: Path | None,
                    seed: int | None, fail_under: float | None, timeout: float | None,
                    import_timeout: float | None, total_timeout: float | None,
                    memory_mb: int | None, unsafe_no_fs_isolation: bool) -> None:
    from grader.pipeline import grade_or_crashed

    limits = _limits(timeout, import_timeout, total_timeout, memory_mb, unsafe_no_fs_isolation)
    limits = replace(limits, private_paths=_classmates(submission))
    report = grade_or_crashed(submission, assignment=assignment, seed=_seed(seed), limits=limits)
    text = FORMATS[fmt].render(report)
    if output is None:
        click.echo(text, nl=False)
    else:
        write_atomically(output, text)
    if fail_under is not None and report["score"] < fail_under:
        sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attention-grader")
def main() -> None:
    """Grade attention implementations and name the misconceptions behind wrong answers."""


@main.command()
@_grading_options(default_format="json")
def grade(submission: Path, assignment: str | None, fmt: str, **options: Any) -> None:
    """Grade one .py file or .ipynb notebook and write the report."""
    _grade_and_emit(submission, assignment, fmt, **options)


@main.command()
@_grading_options(default_format="text")
def check(submission: Path, assignment: str | None, fmt: str, **options: Any) -> None:
    """Self-check: the same grading as `grade`, as readable text."""
    _grade_and_emit(submission, assignment, fmt, **options)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--assignment", "-a", type=ASSIGNMENT, required=True,
              help="Assignment ID, or the path of a course's own assignment folder.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for one report per submission, summary.csv/json/md and report.html.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Submissions graded at once (default: the number of CPUs).")
@click.option("--seed", type=int, default=None, help="Probe seed, as for `grade`.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None, help="Seconds per call.")
@click.option("--total-timeout", type=click.FloatRange(min=0.5), default=None,
              help="Seconds per submission for everything.")
@click.option("--import-timeout", type=click.FloatRange(min=0.1), default=None,
              help="Seconds to load each submission.")
@click.option("--memory-mb", type=click.IntRange(min=256), default=None,
              help="Address-space limit of each submission's process.")
@click.option("--executor", type=click.Choice(["local", "dask"]), default="local",
              show_default=True, help="Grade in local processes or on a Dask cluster.")
@click.option("--scheduler", default=None,
              help="Dask scheduler address (tcp://host:8786) for --executor dask.")
@click.option("--chunk-size", type=click.IntRange(min=1), default=None,
              help="Submissions per Dask task (default 50; 1: one task per submission).")
@click.option("--shard", default=None, metavar="K/N",
              help="Grade only the K-th of N shards of the class (stable: by student); join "
                   "the shards' folders with `attention-grader merge`.")
@click.option("--force", is_flag=True,
              help="Regrade everything, even submissions whose report is up to date.")
@_unsafe_option
def batch(paths: tuple[str, ...], assignment: str, out_dir: Path, jobs: int | None,
          seed: int | None, timeout: float | None, total_timeout: float | None,
          import_timeout: float | None, memory_mb: int | None, executor: str,
          scheduler: str | None, chunk_size: int | None, shard: str | None, force: bool,
          unsafe_no_fs_isolation: bool) -> None:
    """Grade a class: files, folders (one per student), globs or a Gradescope export.

    Writes one report per submission, summary.csv, summary.json, summary.md and report.html.
    Re-running skips submissions whose report is up to date.
    """
    from grader.batch import Progress, Shard, discover, run_batch

    if executor == "dask" and not scheduler:
        raise click.UsageError("--executor dask needs --scheduler ADDRESS.")
    try:
        part = Shard.parse(shard) if shard is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--shard") from None
    entries = discover(paths)
    if not entries:
        raise click.UsageError("no .py or .ipynb submissions found in the given paths.")
    limits = _limits(timeout, import_timeout, total_timeout, memory_mb, unsafe_no_fs_isolation)
    try:
        result = run_batch(entries, assignment, out_dir, jobs=jobs or os.cpu_count() or 1,
                           seed=_seed(seed), limits=limits, executor=executor,
                           scheduler=scheduler, resume=not force, shard=part,
                           chunk_size=chunk_size,
                           progress=Progress(sum(part is None or part.holds(e.student)
                                                 for e in entries)))
    except RuntimeError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"graded {result.graded}, up to date {result.reused}, in {result.seconds:.1f} s; "
               f"reports and the class report (summary.md, report.html) in {out_dir}")


@main.command()
@click.argument("shard_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the class's reports, summaries and class report.")
def merge(shard_dirs: tuple[Path, ...], out_dir: Path) -> None:
    """Join the folders of `batch --shard K/N` runs into one class's folder (as one batch)."""
    from grader.batch import merge_shards

    try:
        rows = merge_shards(shard_dirs, out_dir)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"merged {len(shard_dirs)} shards, {len(rows)} submissions, into {out_dir}")


@main.command("gradescope-zip")
@click.argument("assignment", type=ASSIGNMENT)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("autograder.zip"), show_default=True)
@click.option("--seed", type=int, default=None,
              help="Probe seed used on Gradescope (default: a random secret, so the probes there "
                   "differ from the ones students check against).")
@click.option("--hidden-visibility", type=click.Choice(gradescope.VISIBILITIES),
              default=gradescope.DEFAULT_VISIBILITY, show_default=True,
              help="When students see the tests run on hidden probes.")
@click.option("--package", "packages", multiple=True, metavar="REQUIREMENT",
              help="An extra package submissions may import, as pip arguments (e.g. scipy, "
                   "tensorflow-cpu, \"torch --index-url URL\"); repeatable.")
def gradescope_zip(assignment: str, output: Path, seed: int | None,
                   hidden_visibility: str, packages: tuple[str, ...]) -> None:
    """Build the autograder.zip to upload to a Gradescope programming assignment."""
    try:
        config = gradescope.build_zip(assignment, output, seed=seed,
                                      hidden_visibility=hidden_visibility, packages=packages)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {output} for `{assignment}` (seed {config['seed']}; hidden tests "
               f"{hidden_visibility}). Upload it under Configure Autograder -> Zip file upload.")


@main.command()
@click.argument("assignment", type=ASSIGNMENT)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="Folder for the kit (e.g. a new template repository).")
def starter(assignment: str, out_dir: Path) -> None:
    """Write an assignment's starter kit: student README, notebook, .py and Classroom workflow."""
    from grader.starter import write_kit

    info = registry.get(assignment)
    if info.multi_part:  # (its parts' starter code is each part's)
        parts = ", ".join(found.id for found, _ in registry.parts_of(info))
        raise click.UsageError(f"{assignment} is made of parts ({parts}): its students start "
                               "from the course's own notebook or file; write a part's kit with "
                               "attention-grader starter PART")
    for path in write_kit(assignment, out_dir):
        click.echo(f"wrote {path}")


@main.command()
def assignments() -> None:
    """List the built-in assignments and the course presets, with their signatures."""
    shipped = list(registry.shipped().values())
    for title, kind in (("Built-in (SPEC)", "builtin"), ("Course presets", "preset")):
        click.echo(f"{title}:")
        for spec in (s for s in shipped if s.kind == kind):
            click.echo(f"  {spec.id:32} {spec.signature}")
            click.echo(f"  {'':32} {spec.course or spec.summary}")
    click.echo("\nA course's own assignment: attention-grader new-assignment --from PRESET "
               "--out DIR, edit DIR/assignment.toml, then --assignment DIR everywhere.")


def _without_comments(text: str) -> str:
    """A shipped assignment's TOML without its comment lines (none sits inside a string there:
    checked, the text is kept whole otherwise)."""
    import tomlkit

    kept = re.sub(r"\n{3,}", "\n\n", "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("#"))).lstrip("\n")
    same = tomlkit.parse(kept).unwrap() == tomlkit.parse(text).unwrap()
    return kept + "\n" if same else text


@main.command("new-assignment")
@click.option("--from", "preset", type=click.Choice(ASSIGNMENT_IDS), required=True,
              help="The built-in assignment or preset to start from.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="The new assignment folder (must not exist yet).")
@click.option("--id", "new_id", default=None, help="Its ID (default: the folder's name).")
def new_assignment(preset: str, out_dir: Path, new_id: str | None) -> None:
    """Write a course's own assignment folder, to edit: its interface and its rubric."""
    import contextlib
    import shutil
    import tempfile

    import tomlkit

    if out_dir.exists():
        raise click.UsageError(f"{out_dir} exists already; choose a new folder.")
    source = registry.get(preset)
    wanted = new_id or out_dir.name
    # edited as TOML: the top-level id and kind change, never a table's keys; the preset's
    # comments and its `course` line describe the preset's course, not this one (left out)
    document = tomlkit.parse(_without_comments(
        (source.folder / registry.INTERFACE_FILE).read_text(encoding="utf-8")))
    document["id"] = wanted
    document["kind"] = "course"
    document.pop("course", None)
    document.pop("canonical", None)  # (the task's own call: the built-in assignment keeps it)
    header = (f"# A course's own assignment, started from `{preset}` "
              f"(attention-grader new-assignment).\n# Edit the interface to match your starter "
              f"code; see the README, \"Adapting the grader to your course\".\n")
    rubric = registry.rubric_of(source)
    # written beside, checked, then moved into place: a failure leaves nothing behind (not
    # even the parent folders made for it)
    made = [p for p in reversed(out_dir.absolute().parents) if not p.exists()]
    staging = None
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
        (staging / registry.INTERFACE_FILE).write_text(header + tomlkit.dumps(document),
                                                       encoding="utf-8")
        (staging / registry.RUBRIC_FILE).write_text(
            json.dumps({**rubric, "assignment": wanted}, indent=2) + "\n", encoding="utf-8")
        registry.get(str(staging))  # it must read back
        staging.chmod(0o755)
        staging.rename(out_dir)
    except Exception as exc:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise click.ClickException(f"could not write {out_dir} from {preset}: {exc}") from exc
    click.echo(f"wrote {out_dir}/{registry.INTERFACE_FILE} and {registry.RUBRIC_FILE}; grade with "
               f"--assignment {out_dir}")


@main.command()
def schema() -> None:
    """Print the JSON Schema every report follows."""
    from grader.core.report import schema as report_schema

    click.echo(json.dumps(report_schema(), indent=2))


def _explain_bank_item(item: str) -> None:
    """A question-bank item: what it is about, and the misconceptions that cite it, explained."""
    import textwrap

    from reference.catalogue import CATALOGUE
    from reference.question_bank import ITEMS, POINTS, where_kept

    click.echo(f"{item} (question bank): {ITEMS[item]}\n")
    if item in POINTS:
        click.echo(textwrap.fill(f"The point: {POINTS[item]}", 96, break_on_hyphens=False)
                   + "\n")
    citing = [row for row in CATALOGUE if item in row.question_bank]
    if citing:
        click.echo("The mistakes it is about:\n")
    for row in citing:
        click.echo(f"{row.id}: {row.title}")
        click.echo(f"  {row.explanation}\n")
    click.echo(textwrap.fill(where_kept(item), 96, break_on_hyphens=False))


@main.command()
@click.argument("misconception_id")
def explain(misconception_id: str) -> None:
    """Explain one misconception ID, or a question-bank item (A-err-2) a report cites."""
    from reference.catalogue import BY_ID
    from reference.question_bank import ITEMS

    if misconception_id in ITEMS:
        _explain_bank_item(misconception_id)
        return
    row = BY_ID.get(misconception_id)
    if row is None:
        import difflib

        close = difflib.get_close_matches(misconception_id, [*BY_ID, *ITEMS], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise click.UsageError(f"unknown misconception or question-bank item "
                               f"{misconception_id!r}.{hint}")
    assignments_of = sorted({t for v in row.variants for t in v.tasks}) or ["all"]
    click.echo(f"{row.id}: {row.title}\n")
    click.echo(row.explanation + "\n")
    click.echo(f"Assignments: {', '.join(assignments_of)}")
    if row.question_bank:
        click.echo(f"Question bank: {', '.join(row.question_bank)}")


if __name__ == "__main__":
    main()
