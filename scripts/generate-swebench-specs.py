#!/usr/bin/env python3
"""Writes src/ssebench/swebench/official_specs.json from an installed `swebench` 4.x.

The official harness kept the install specification of every Python repository it
evaluates in tables (`swebench/harness/constants/python.py`); its 5.x releases no
longer ship them. ssebench reads those tables as data, never as code of its own: this
script runs the constants module on its own (it is plain literals, no imports) and reads
the repositories' log parsers from `log_parsers/python.py` with `ast`, so that neither
the harness nor its dependencies are needed. Usage, in a scratch venv:

    python3 -m venv /tmp/swebench4 && /tmp/swebench4/bin/pip install --no-deps swebench==4.1.0
    /tmp/swebench4/bin/python scripts/generate-swebench-specs.py

The tables are identical in swebench 3.0.17, 4.0.4 and 4.1.0 (docs/datasets.md).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import runpy
import sys
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "src/ssebench/swebench/official_specs.json"


def package_folder() -> Path:
    found = importlib.util.find_spec("swebench")  # finds it without importing it
    if found is None or not found.submodule_search_locations:
        sys.exit("generate-swebench-specs: swebench is not installed here; see the docstring")
    return Path(next(iter(found.submodule_search_locations)))


def parser_names(log_parsers: Path) -> dict[str, str]:
    """Repository -> the name of its log parser function, as the 5.x registry has it.

    The module binds aliases (`parse_log_pydicom = parse_log_pytest_options`); the
    registry of 5.x holds the functions, so an alias is followed to the function it names.
    """
    tree = ast.parse(log_parsers.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    mapping: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        if isinstance(node.value, ast.Name):
            aliases[target.id] = node.value.id
        elif target.id == "MAP_REPO_TO_PARSER_PY" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(key, ast.Constant) and isinstance(value, ast.Name)
                mapping[key.value] = value.id
    resolved = {}
    for repo, name in mapping.items():
        while name in aliases:
            name = aliases[name]
        resolved[repo] = name
    return resolved


def main() -> None:
    folder = package_folder()
    version = importlib.metadata.version("swebench")
    if not version.startswith(("3.", "4.")):
        sys.exit(f"generate-swebench-specs: swebench {version} ships no tables; use a 4.x release")
    constants_file = folder / "harness/constants/python.py"
    parsers_file = folder / "harness/log_parsers/python.py"
    constants = runpy.run_path(str(constants_file))
    parsers = parser_names(parsers_file)
    repos = {}
    for repo, versions in sorted(constants["MAP_REPO_VERSION_TO_SPECS_PY"].items()):
        repos[repo] = {
            "log_parser": parsers.get(repo),
            "requirements_paths": constants["MAP_REPO_TO_REQS_PATHS"].get(repo, []),
            "environment_yml_paths": constants["MAP_REPO_TO_ENV_YML_PATHS"].get(repo, []),
            "versions": {key: versions[key] for key in sorted(versions)},
        }
    sources = {
        str(path.relative_to(folder.parent)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (constants_file, parsers_file)
    }
    document = {
        "provenance": {
            "package": "swebench",
            "version": version,
            "sources": sources,
            "written_by": "scripts/generate-swebench-specs.py",
            "license": "MIT (the SWE-bench project)",
        },
        "repos": repos,
    }
    OUTPUT.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    count = sum(len(entry["versions"]) for entry in repos.values())
    print(f"generate-swebench-specs: {len(repos)} repositories, {count} specifications -> {OUTPUT}")


if __name__ == "__main__":
    main()
