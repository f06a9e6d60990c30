"""Materialise the documentation evaluation's pages from git mirrors into a local folder.

The upstream docs are not committed here (licences, size): ``manifest.json`` names each project's
repository, the exact commit, its licence and the pages; this script copies those pages, byte for byte,
from a bare git mirror of each repository into ``eval_docs/`` (gitignored) and writes ``SOURCES.md``
there saying where every folder came from.

A mirror is looked up as ``<mirrors>/<owner>+<name>/repo`` (the layout the session's ``fetch`` tool
makes) or ``<mirrors>/<owner>/<name>.git``; make one elsewhere with
``git clone --bare https://github.com/<owner>/<name> <mirrors>/<owner>/<name>.git``.

    python bench/docs_eval/fetch_docs.py [--mirrors /work/.mirror] [--out eval_docs]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = HERE / "manifest.json"


def mirror_dir(mirrors: Path, repo: str) -> Path:
    owner, name = repo.split("/", 1)
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / owner / f"{name}.git"):
        if candidate.is_dir():
            return candidate
    raise SystemExit(
        f"no git mirror of {repo} under {mirrors}: "
        f"git clone --bare https://github.com/{repo} {mirrors / owner / (name + '.git')}"
    )


def git_show(git_dir: Path, commit: str, path: str) -> bytes:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{git_dir}: cannot read {commit[:12]}:{path} ({done.stderr.decode().strip()}); "
            "is the mirror older than the manifest's commit?"
        )
    return done.stdout


def materialise(mirrors: Path, out: Path, manifest: Path = MANIFEST) -> int:
    """Copy every manifest page to ``out/<dest><page>``; returns the number of pages written."""
    spec = json.loads(manifest.read_text(encoding="utf-8"))
    written = 0
    lines = [
        "# Where these pages come from",
        "",
        f"Made by bench/docs_eval/fetch_docs.py from {manifest.name} ({manifest.parent.name}).",
        "",
    ]
    for project in spec["projects"]:
        git_dir = mirror_dir(mirrors, project["repo"])
        for page in project["pages"]:
            target = out / project["dest"] / page
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(git_show(git_dir, project["commit"], project["prefix"] + page))
            written += 1
        lines.append(
            f"- `{project['dest']}`: {len(project['pages'])} pages of https://github.com/{project['repo']} "
            f"at {project['commit']}, under `{project['prefix']}`; licence: {project['licence']}"
        )
    (out / "SOURCES.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="folder of git mirrors")
    parser.add_argument("--out", type=Path, default=ROOT / "eval_docs", help="where the pages go")
    parser.add_argument(
        "--manifest",
        type=Path,
        default=MANIFEST,
        help="which pages (default: the evaluation's; bench/docs_eval/train/manifest.json: the how-to "
        "training set's)",
    )
    args = parser.parse_args(argv)
    count = materialise(args.mirrors, args.out, args.manifest)
    print(f"{count} pages in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
