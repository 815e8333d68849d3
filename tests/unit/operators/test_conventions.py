"""Both operators as Airflow users expect them: keyword-only arguments, template fields, documented signatures."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from blinkops_provider.operators.connection_types import ConnectionTypesToXComOperator
from blinkops_provider.operators.tables import UpdateTableFieldOperator


def test_operators_take_keyword_arguments_only() -> None:
    # Airflow 3 raises TypeError; Airflow 2's operator metaclass raises AirflowException first.
    with pytest.raises((TypeError, AirflowException)):
        UpdateTableFieldOperator("ws", "t", "f", "text", "F", task_id="x")  # type: ignore[misc]
    with pytest.raises((TypeError, AirflowException)):
        ConnectionTypesToXComOperator({"a": 1}, task_id="x")  # type: ignore[misc]


def test_template_fields_and_renderers() -> None:
    assert UpdateTableFieldOperator.template_fields == (
        "ws_id",
        "table",
        "field",
        "field_type",
        "display_name",
        "description",
        "attributes",
    )
    assert UpdateTableFieldOperator.template_fields_renderers == {"attributes": "json"}
    assert ConnectionTypesToXComOperator.template_fields == ("filter", "sort", "select", "output_path")
    assert ConnectionTypesToXComOperator.template_fields_renderers == {"filter": "json"}


@pytest.mark.parametrize(
    ("operator", "parameters"),
    [
        (
            UpdateTableFieldOperator,
            [
                "ws_id",
                "table",
                "field",
                "field_type",
                "display_name",
                "attributes",
                "description",
                "replace",
                "blink_conn_id",
                "hook_params",
                "kwargs",
            ],
        ),
        (
            ConnectionTypesToXComOperator,
            [
                "filter",
                "sort",
                "select",
                "page_size",
                "max_items",
                "output_path",
                "blink_conn_id",
                "hook_params",
                "kwargs",
            ],
        ),
    ],
)
def test_signatures_are_the_documented_ones(operator: type, parameters: list[str]) -> None:
    import inspect

    signature = inspect.signature(operator.__init__)
    assert list(signature.parameters)[1:] == parameters
    assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in list(signature.parameters.values())[1:])
    assert signature.parameters["blink_conn_id"].default == "blink_default"
    assert signature.parameters["hook_params"].default is None
