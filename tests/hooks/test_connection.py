from __future__ import annotations

import pytest
import requests_mock as rm

from blinkops_provider import get_provider_info
from blinkops_provider._names import build_base_url
from blinkops_provider.exceptions import BlinkConfigurationError
from blinkops_provider.hooks.blink import BlinkHook
from tests.conftest import API_KEY, set_connection

PAGE = {"limit": 1, "offset": 0, "total": 0, "results": []}


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        (None, None, "https://app.blinkops.com/api/v1"),
        ("", None, "https://app.blinkops.com/api/v1"),
        ("app.blinkops.com", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/api/v1", None, "https://app.blinkops.com/api/v1"),
        ("https://app.blinkops.com/api/v1///", None, "https://app.blinkops.com/api/v1"),
        ("http://127.0.0.1:8080", None, "http://127.0.0.1:8080/api/v1"),
        ("127.0.0.1", 8080, "https://127.0.0.1:8080/api/v1"),
        ("http://127.0.0.1:9000", 9000, "http://127.0.0.1:9000/api/v1"),  # the Port agrees: the list shows it
        ("https://app.blinkops.com", 443, "https://app.blinkops.com/api/v1"),
        ("http://localhost", 80, "http://localhost/api/v1"),
        ("https://blink.corp.example/prefix", None, "https://blink.corp.example/prefix/api/v1"),
        (" https://app.dev.blinkops.com ", None, "https://app.dev.blinkops.com/api/v1"),
    ],
)
def test_base_url(host: str | None, port: int | None, expected: str) -> None:
    assert build_base_url(host, port) == expected


@pytest.mark.parametrize(
    ("host", "port", "named"),
    [
        ("http://127.0.0.1:9000", 8080, 9000),  # the Base URL edited, the Port left as it was
        ("https://app.blinkops.com", 43211, 443),  # from the sandbox to a tenant: never sent to :43211
        ("http://localhost", 43211, 80),
        ("blink.test:8443", 8080, 8443),
    ],
)
def test_a_port_that_disagrees_with_the_base_url_is_refused_naming_both(host: str, port: int, named: int) -> None:
    """#56 item 12: the Port is shown in the form and the connection list; one the Base URL
    contradicts is an error that says which to change, never silently ignored or used."""
    with pytest.raises(BlinkConfigurationError, match=rf"names port {named}, and its Port field says {port}") as err:
        build_base_url(host, port)
    assert "Clear the Port field" in str(err.value)


@pytest.mark.parametrize("host", ["ftp://blink.example", "https://", "https://x/api?x=1", "https://x/#frag"])
def test_unusable_hosts_are_refused(host: str) -> None:
    with pytest.raises(BlinkConfigurationError, match="host"):
        build_base_url(host)


def test_init_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_BLINK_DEFAULT", raising=False)
    hook = BlinkHook("does_not_exist")
    assert hook.blink_conn_id == "does_not_exist"
    assert "_settings" not in hook.__dict__
    assert "session" not in hook.__dict__


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retry_limit": 0}, "retry_limit"),
        ({"retry_limit": 1.5}, "retry_limit"),
        ({"retry_limit": True}, "retry_limit"),
        ({"retry_delay": -1}, "retry_delay"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": (1, -1)}, "timeout"),
    ],
)
def test_bad_hook_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BlinkHook(**kwargs)


def test_missing_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, password="")
    with rm.Mocker() as m, pytest.raises(BlinkConfigurationError, match=r"no API key.*password"):
        BlinkHook().list_connection_types()
    assert not m.called


def test_requests_carry_key_header_user_agent_and_timeout(blink_conn: None) -> None:
    from blinkops_provider import __version__

    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook().list_connection_types(limit=1)
    request = m.request_history[0]
    assert request.headers["BLINK-API-KEY"] == API_KEY
    assert request.headers["User-Agent"] == f"airflow-provider-blinkops/{__version__}"
    assert request.headers["Accept"] == "application/json"
    assert request.timeout == (10.0, 60.0)
    assert request.verify is not False  # True, or the CA bundle of REQUESTS_CA_BUNDLE


def test_extras_set_header_name_tls_and_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"header_name": "X-Other-Key", "verify_ssl": "false", "timeout": "7.5"})
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook().list_connection_types(limit=1)
    request = m.request_history[0]
    assert request.headers["X-Other-Key"] == API_KEY
    assert "BLINK-API-KEY" not in request.headers
    assert request.verify is False
    assert request.timeout == 7.5


def test_airflow2_prefixed_extras_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"extra__blink__timeout": [3, 30]})
    assert BlinkHook().settings.timeout == (3.0, 30.0)


@pytest.mark.parametrize(
    ("text", "timeout"),
    [("30", 30.0), (" 7.5 ", 7.5), ("5, 120", (5.0, 120.0)), ("5,120", (5.0, 120.0)), ("[5, 120]", (5.0, 120.0))],
)
def test_the_timeout_field_takes_text_as_the_form_saves_it(
    monkeypatch: pytest.MonkeyPatch, text: str, timeout: object
) -> None:
    set_connection(monkeypatch, extra={"timeout": text})
    assert BlinkHook().settings.timeout == timeout


def test_the_timeout_field_is_text_in_both_forms() -> None:
    """One field takes a number or a pair: Airflow 3 renders the schema, Airflow 2 the widget."""
    (connection_type,) = get_provider_info()["connection-types"]
    field = connection_type["conn-fields"]["timeout"]
    assert field["schema"]["type"] == ["string", "null"]
    assert "5, 120" in field["description"]


def test_hook_timeout_wins_over_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    set_connection(monkeypatch, extra={"timeout": 5})
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        BlinkHook(timeout=(2, 20)).list_connection_types(limit=1)
    assert m.request_history[0].timeout == (2.0, 20.0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"verify_ssl": "maybe"}, "verify_ssl' must be true or false"),
        ({"timeout": "soon"}, "timeout' must be a positive number"),
        ({"timeout": "5, 120, 9"}, "or connect and read seconds such as '5, 120', got"),
        ({"timeout": "5, -1"}, "timeout' must be a positive number"),
        ({"header_name": "Bad Header:"}, "header_name' must be an HTTP header name"),
    ],
)
def test_bad_extras_are_config_errors(monkeypatch: pytest.MonkeyPatch, extra: dict, message: str) -> None:
    set_connection(monkeypatch, extra=extra)
    with pytest.raises(BlinkConfigurationError, match=message):
        BlinkHook().base_url  # noqa: B018


def test_settings_repr_hides_the_key(blink_conn: None) -> None:
    settings = BlinkHook().settings
    assert API_KEY not in repr(settings)
    assert settings.api_key == API_KEY


def test_key_is_handed_to_the_secret_masker(blink_conn: None, monkeypatch: pytest.MonkeyPatch) -> None:
    masked: list[str] = []
    monkeypatch.setattr("blinkops_provider.hooks.blink.mask_secret", masked.append)
    BlinkHook().base_url  # noqa: B018
    assert masked == [API_KEY]


def test_session_is_reused_and_close_releases_it(blink_conn: None) -> None:
    hook = BlinkHook()
    with rm.Mocker() as m:
        m.get("https://blink.test/api/v1/connection_types", json=PAGE)
        first = hook.get_conn()
        hook.list_connection_types(limit=1)
        hook.list_connection_types(limit=1)
        assert hook.get_conn() is first
        hook.close()
        assert hook.get_conn() is not first


def test_provider_info_declares_the_connection_type() -> None:
    info = get_provider_info()
    (conn,) = info["connection-types"]
    assert conn["connection-type"] == BlinkHook.conn_type == "blink"
    assert conn["hook-class-name"] == "blinkops_provider.hooks.blink.BlinkHook"
    assert conn["hook-name"] == "Blink"
    behaviour = conn["ui-field-behaviour"]
    assert behaviour["relabeling"] == {
        "host": "Base URL",
        "password": "API key",
        "port": "Port (empty: the Base URL's)",
    }
    assert set(behaviour["hidden-fields"]) == {"login", "schema"}  # the Port is shown, so never stale unseen
    assert behaviour["placeholders"]["host"] == "https://app.blinkops.com"
    fields = conn["conn-fields"]
    assert fields["header_name"]["schema"]["default"] == "BLINK-API-KEY"
    assert fields["verify_ssl"]["schema"]["default"] is True
    assert "timeout" in fields


def test_the_providers_page_links_the_project_documentation() -> None:
    """Airflow's Providers page links the package to its Project-URL named Documentation."""
    from importlib.metadata import metadata

    urls = dict(entry.split(", ", 1) for entry in metadata("airflow-provider-blinkops").get_all("Project-URL") or [])
    assert urls["Documentation"].startswith("https://")
    from airflow.providers_manager import ProvidersManager

    info = ProvidersManager().providers["airflow-provider-blinkops"].data
    if "documentation-url" in info:  # Airflow 3 reads it into the provider info (3.1 keeps the space after the comma)
        assert info["documentation-url"].strip() == urls["Documentation"]
    else:  # Airflow 2.11 asks for it when the page is drawn
        from airflow.utils.docs import get_doc_url_for_provider

        assert get_doc_url_for_provider("airflow-provider-blinkops", "0.1.0") == urls["Documentation"]


def test_provider_is_registered_with_airflow() -> None:
    from importlib.metadata import entry_points

    (entry,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("blinkops")]
    assert entry.load()()["package-name"] == "airflow-provider-blinkops"


def test_airflow2_ui_hooks_match_the_provider_info() -> None:
    behaviour = BlinkHook.get_ui_field_behaviour()
    assert behaviour["relabeling"]["password"] == "API key"
    assert behaviour["hidden_fields"] == ["login", "schema"]


def test_airflow2_form_widgets() -> None:
    try:
        import flask_appbuilder  # noqa: F401
    except ImportError:
        # Airflow 3 without FAB: the providers manager catches this and reads the provider info.
        with pytest.raises(ImportError):
            BlinkHook.get_connection_form_widgets()
    else:
        widgets = BlinkHook.get_connection_form_widgets()
        assert set(widgets) == {"header_name", "verify_ssl", "timeout", "table_page"}


def test_uri_form_of_the_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_BLINK_DEFAULT", f"blink://:{API_KEY}@app.blinkops.com?timeout=30")
    settings = BlinkHook().settings
    assert (settings.base_url, settings.api_key, settings.timeout) == ("https://app.blinkops.com/api/v1", API_KEY, 30.0)


def test_no_conn_field_is_one_the_airflow_ui_masks() -> None:
    """Airflow's UI treats an extra whose name looks secret as a secret, and saves '***' from its form."""
    try:
        from airflow.sdk._shared.secrets_masker import should_hide_value_for_key  # Airflow 3
    except ImportError:
        from airflow.utils.log.secrets_masker import should_hide_value_for_key  # type: ignore[no-redef]  # Airflow 2

    from blinkops_provider import get_provider_info

    (connection_type,) = get_provider_info()["connection-types"]
    names = list(connection_type["conn-fields"])
    assert names == ["header_name", "verify_ssl", "timeout", "table_page"]
    assert [name for name in names if should_hide_value_for_key(name)] == []
    assert should_hide_value_for_key("api_key_header")  # why the extra was renamed


def test_the_table_page_is_the_hosts_root_unless_the_extra_names_a_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """#63 item 11: the "Blink table" link is built from the connection's host, never another."""
    set_connection(monkeypatch, host="https://blink.test/tenant")
    assert BlinkHook().table_page("ws-1", "Incidents") == "https://blink.test/tenant/"
    set_connection(monkeypatch, host="https://blink.test", extra={"table_page": "/t/{ws_id}/{table}"})
    assert BlinkHook().table_page("ws 1", "Q1/Q2 plans") == "https://blink.test/t/ws%201/Q1%2FQ2%20plans"


@pytest.mark.parametrize("page", ["https://evil.test/{table}", "//evil.test/{table}", "/t/{name}", "/t/{", "t/{table}"])
def test_a_table_page_that_is_not_a_path_on_the_host_is_refused(monkeypatch: pytest.MonkeyPatch, page: str) -> None:
    set_connection(monkeypatch, extra={"table_page": page})
    with pytest.raises(BlinkConfigurationError, match=r"extra 'table_page' must be a path on the connection's host"):
        BlinkHook().table_page("ws-1", "Incidents")
