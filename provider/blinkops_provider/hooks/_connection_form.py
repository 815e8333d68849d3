"""
The ``blink`` connection's form in Airflow 2's UI.

Airflow 3 reads the same fields from :func:`blinkops_provider.get_provider_info`.
"""

from __future__ import annotations

from typing import Any

from blinkops_provider import get_provider_info
from blinkops_provider.utils.blink_api import DEFAULT_HEADER


def ui_field_behaviour() -> dict[str, Any]:
    """Return which of the form's fields are hidden, relabelled and given placeholders."""
    behaviour = get_provider_info()["connection-types"][0]["ui-field-behaviour"]
    return {
        "hidden_fields": behaviour["hidden-fields"],
        "relabeling": behaviour["relabeling"],
        "placeholders": behaviour["placeholders"],
    }


def connection_form_widgets() -> dict[str, Any]:
    """Return the form's extra fields (imports Airflow 2's Flask UI libraries)."""
    from flask_appbuilder.fieldwidgets import BS3TextFieldWidget
    from flask_babel import lazy_gettext
    from wtforms import BooleanField, StringField
    from wtforms.validators import Optional

    fields = get_provider_info()["connection-types"][0]["conn-fields"]

    def text(name: str) -> dict[str, Any]:
        return {"label": lazy_gettext(fields[name]["label"]), "description": fields[name].get("description", "")}

    return {
        "header_name": StringField(**text("header_name"), widget=BS3TextFieldWidget(), default=DEFAULT_HEADER),
        "verify_ssl": BooleanField(**text("verify_ssl"), default=True),
        "timeout": StringField(**text("timeout"), widget=BS3TextFieldWidget(), validators=[Optional()]),
        "table_page": StringField(**text("table_page"), widget=BS3TextFieldWidget(), validators=[Optional()]),
    }
