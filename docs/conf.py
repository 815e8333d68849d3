"""Sphinx configuration of the airflow-provider-blinkops documentation."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "provider"))
sys.path.insert(0, str(ROOT / "sandbox"))  # the sandbox, its own distribution, documented beside the provider
# autodoc imports the provider, and so Airflow: keep Airflow's home out of the user's.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="blink-docs-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from blinkops_provider import __version__  # noqa: E402

project = "airflow-provider-blinkops"
author = "airflow-provider-blinkops developers"
copyright = "2026, airflow-provider-blinkops developers"  # noqa: A001
release = version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]  # docstrings are reST (:param:)
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_includes"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Pydantic's generated members (model_config, model_fields, ...) are not ours to document.
autodoc_default_options["exclude-members"] = "model_config, model_fields, model_computed_fields, model_post_init"

html_theme = "furo"
html_title = f"airflow-provider-blinkops {release}"

# Every cross-reference resolves (make docs runs with -W): the provider's own names point at the
# public modules that document them. Names of Python, Airflow and the libraries are not linked:
# the build has no network for intersphinx, so they are listed here instead of failing the build.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(collections\.abc|typing|os|threading|datetime|logging|enum|pathlib|contextlib|argparse)\..*"),
    (r"py:.*", r"(airflow|pydantic|requests|urllib3|sqlalchemy|pendulum|starlette|fastapi)(\..*)?"),
    (r"py:.*", r"(Context|timedelta|datetime|TaskGroup|ObjectStoragePath|Timeout|TriggerEvent)"),
    (r"py:class", r"strict=True|func=.*"),  # pydantic's Annotated metadata (StrictStr, AfterValidator), as shown
    (r"py:class", r"dt\.datetime"),  # datetime, as the modules import it
]


def _public_name(app: object, env: object, node: dict, contnode: object) -> object:
    """A reference to a public name under the private module that defines it (a signature's or a
    base class's ``blinkops_provider.migrations._plan_types.SchemaPlan``) resolves to where the API
    reference documents it: the public module whose ``__all__`` lists it."""
    import importlib

    target = node.get("reftarget", "")
    if not target.startswith(("blinkops_provider.", "blinkops_sandbox.")) or "._" not in target:
        return None
    name = target.rsplit(".", 1)[-1]
    parts = target.split(".")[:-1]
    while parts:
        parts.pop()
        module = ".".join(parts)
        if module and not any(part.startswith("_") for part in parts):
            if name in getattr(importlib.import_module(module), "__all__", ()):
                py = env.get_domain("py")  # type: ignore[attr-defined]
                node["reftarget"] = f"{module}.{name}"
                return py.resolve_xref(
                    env, node["refdoc"], app.builder, node["reftype"], node["reftarget"], node, contnode  # type: ignore[attr-defined]
                )
    return None


def setup(app: object) -> None:
    """Register the resolver of public names under private modules."""
    app.connect("missing-reference", _public_name)  # type: ignore[attr-defined]
