"""The Blink connection made in Airflow 3's UI, as a new user would: ``make ui-test``.

A real browser fills the form, typing only the Base URL and the API key. The REST API then
reads back what was stored and runs the connection test. Screenshots go to ``build/ui-test/``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from blinkops_sandbox import BlinkSandbox
from tests.ui.conftest import SHOTS, AirflowUI

pytestmark = pytest.mark.ui

WAIT = 60  # seconds a page may take to show what is waited for


def waiting(browser: Any) -> WebDriverWait[Any]:
    """A wait that looks again when the page re-renders an element it was reading (React does)."""
    return WebDriverWait(browser, WAIT, ignored_exceptions=(StaleElementReferenceException,))


def button(browser: Any, text: str) -> Any:
    """The button whose text or aria-label is ``text``, once it shows."""

    def find(driver: Any) -> Any:
        for candidate in driver.find_elements(By.TAG_NAME, "button"):
            if text in (candidate.text, candidate.get_attribute("aria-label")) and candidate.is_displayed():
                return candidate
        return False

    return waiting(browser).until(find, f"no button {text!r}")


def press(browser: Any, text: str) -> None:
    """Click the button ``text``, finding it again if the page re-rendered it in between."""

    def click(driver: Any) -> bool:
        button(driver, text).click()
        return True

    waiting(browser).until(click, f"could not click {text!r}")


def label_text(element: Any) -> str:
    """A label's own words, without the "*" of a required field."""
    return str(element.text).split("\n")[0].strip()


def field_for(browser: Any, label: str) -> Any:
    """The input a label belongs to."""
    tag = waiting(browser).until(
        lambda driver: next((e for e in driver.find_elements(By.TAG_NAME, "label") if label_text(e) == label), False),
        f"no label {label!r}",
    )
    return browser.find_element(By.ID, tag.get_attribute("for"))


def labels(browser: Any) -> set[str]:
    return {label_text(e) for e in browser.find_elements(By.TAG_NAME, "label") if e.is_displayed()}


def stored_connection(ui: AirflowUI, conn_id: str) -> dict[str, Any]:
    response = ui.api("GET", f"/connections/{conn_id}")
    assert response.status_code == 200, response.text
    connection: dict[str, Any] = response.json()
    return connection


def test_a_connection_made_in_the_form_works(airflow_ui: AirflowUI, sandbox: BlinkSandbox, browser: Any) -> None:
    browser.get(f"{airflow_ui.url}/connections")
    press(browser, "Add Connection")
    browser.find_element(By.NAME, "connection_id").send_keys("blink_ui")
    kind = field_for(browser, "Connection Type")
    kind.send_keys("Blink")
    waiting(browser).until(lambda driver: "Blink" in driver.page_source)
    kind.send_keys(Keys.ENTER)

    # The form is Blink's: relabelled, with login and schema hidden; the Port shown, as in the list.
    base_url = field_for(browser, "Base URL")
    assert base_url.get_attribute("placeholder") == "https://app.blinkops.com"
    shown = labels(browser)
    assert {"Base URL", "API key", "Port (empty: the Base URL's)"} <= shown
    assert not {"Host", "Password", "Login", "Schema", "Port"} & shown
    base_url.send_keys(sandbox.url)
    field_for(browser, "API key").send_keys(sandbox.api_key)
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SHOTS / "connection-form.png"))

    # The extra fields show their defaults, and the timeout is a text field (not a number spinner).
    press(browser, "Extra Fields")
    header = waiting(browser).until(
        lambda driver: next(
            (e for e in driver.find_elements(By.NAME, "element_header_name") if e.is_displayed()), False
        )
    )
    assert header.get_attribute("value") == "BLINK-API-KEY"
    assert browser.find_element(By.NAME, "element_verify_ssl").is_selected()
    timeout = browser.find_element(By.NAME, "element_timeout")
    assert timeout.get_attribute("type") == "text"
    assert not browser.find_elements(By.CSS_SELECTOR, "[id^='number-input:element_timeout']")
    assert {"API key header", "Verify TLS certificates", "Timeout (seconds)"} <= labels(browser)
    browser.save_screenshot(str(SHOTS / "connection-form-extra-fields.png"))

    press(browser, "Save")
    waiting(browser).until(
        lambda _: airflow_ui.api("GET", "/connections/blink_ui").status_code == 200, "the connection was not saved"
    )
    browser.save_screenshot(str(SHOTS / "connection-list.png"))

    stored = stored_connection(airflow_ui, "blink_ui")
    assert (stored["conn_type"], stored["host"]) == ("blink", sandbox.url)
    assert (stored["login"], stored["schema"], stored["port"]) == (None, None, None)
    assert json.loads(stored["extra"]) == {
        "header_name": "BLINK-API-KEY",
        "verify_ssl": True,
        "timeout": None,
        "table_page": None,
    }

    # The stored key is the one typed: the test of the saved connection reaches Blink with it.
    tested = airflow_ui.api("POST", "/connections/test", json={"connection_id": "blink_ui", "conn_type": "blink"})
    assert tested.status_code == 200, tested.text
    total = len(sandbox.store.connection_type_ids())
    assert tested.json() == {
        "status": True,
        "message": f"Connected to {sandbox.base_url}: {total} connection types visible.",
    }
    assert sandbox.requests[-1]["headers"]["BLINK-API-KEY".lower()] == "***"  # the sandbox logs it masked


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"password": "{key}"}, True, "Connected to {base_url}: {total} connection types visible."),
        ({"password": "{key}", "extra": '{"timeout": "5, 30"}'}, True, "Connected to {base_url}: {total}"),
        (
            {"password": "not-the-key"},
            False,
            "GET /connection_types -> 401: invalid API key; Blink refused the API key of the connection: check its API key",
        ),
        ({}, False, "the connection has no API key: put it in the password field (labelled 'API key' in the UI)"),
        (
            {"password": "{key}", "extra": '{"timeout": "soon"}'},
            False,
            "extra 'timeout' must be a positive number of seconds, or connect and read seconds such as '5, 120'",
        ),
    ],
    ids=["right-key", "timeout-pair-as-text", "wrong-key", "no-key", "bad-timeout"],
)
def test_the_rest_api_test_of_an_unsaved_connection(
    airflow_ui: AirflowUI, sandbox: BlinkSandbox, body: dict[str, str], status: bool, message: str
) -> None:
    """What the form's test sends before saving; Airflow runs it under a random temporary id."""
    filled = {key: value.replace("{key}", sandbox.api_key) for key, value in body.items()}
    request = {"connection_id": "blink_not_saved", "conn_type": "blink", "host": sandbox.url, **filled}
    response = airflow_ui.api("POST", "/connections/test", json=request)
    assert response.status_code == 200, response.text
    answer = response.json()
    total = len(sandbox.store.connection_type_ids())
    assert answer["status"] is status
    assert answer["message"].startswith(message.format(base_url=sandbox.base_url, total=total)), answer["message"]
    assert "blink_not_saved" not in answer["message"]
    assert filled.get("password", "\0") not in answer["message"]


def test_the_list_test_button_meets_airflows_port_bug(
    airflow_ui: AirflowUI, sandbox: BlinkSandbox, browser: Any
) -> None:
    """Airflow 3.3.2's list sends port 0 for a connection without a port and shows "Bad Request".

    docs/troubleshooting.md says what works instead. When this test fails, Airflow has fixed
    the bug: drop the note.
    """
    created = airflow_ui.api(
        "POST",
        "/connections",
        json={"connection_id": "blink_list", "conn_type": "blink", "host": sandbox.url, "password": sandbox.api_key},
    )
    assert created.status_code == 201, created.text
    browser.get(f"{airflow_ui.url}/connections")

    def test_in_row(driver: Any) -> bool:
        row = next((r for r in driver.find_elements(By.TAG_NAME, "tr") if "blink_list" in r.text), None)
        if row is None:
            return False
        row.find_element(By.CSS_SELECTOR, "button[aria-label='Test Connection']").click()
        return True

    waiting(browser).until(test_in_row, "no test button in the row of blink_list")
    waiting(browser).until(lambda driver: "Test Connection Failed" in driver.page_source)
    assert "Bad Request" in browser.page_source
    browser.save_screenshot(str(SHOTS / "connection-list-test-button.png"))
    # What troubleshooting recommends instead works: the REST API's test of the stored connection.
    tested = airflow_ui.api("POST", "/connections/test", json={"connection_id": "blink_list", "conn_type": "blink"})
    assert tested.json()["status"] is True, tested.text


def test_a_base_url_edited_after_a_port_was_stored_is_told_to_clear_the_port(
    airflow_ui: AirflowUI, sandbox: BlinkSandbox, browser: Any
) -> None:
    """#50 item 2, #56 item 12: make airflow-ui stores its connection with the sandbox's port, which
    the form and the list show. A person who edits the Base URL to another port and leaves the
    Port as it was (as this PATCH of the host alone does) and presses Test is told the two
    disagree and which to change: never the old port reached, never a Port silently ignored.
    Once the Port is cleared, the list no longer shows the old one."""
    made = {"connection_id": "blink_edited", "conn_type": "blink", "host": sandbox.url, "port": sandbox.port}
    created = airflow_ui.api("POST", "/connections", json={**made, "password": sandbox.api_key})
    assert created.status_code == 201, created.text
    edited = airflow_ui.api(
        "PATCH",
        "/connections/blink_edited",
        params={"update_mask": "host"},
        json={**made, "host": "http://127.0.0.1:9"},
    )
    assert edited.ok and edited.json()["port"] == sandbox.port, edited.text  # the port is still stored
    browser.get(f"{airflow_ui.url}/connections")

    def row_of(driver: Any) -> Any:
        return next((r for r in driver.find_elements(By.TAG_NAME, "tr") if "blink_edited" in r.text), None)

    def test_in_row(driver: Any) -> bool:
        row = row_of(driver)
        if row is None:
            return False
        row.find_element(By.CSS_SELECTOR, "button[aria-label='Test Connection']").click()
        return True

    waiting(browser).until(row_of, "blink_edited is not listed")
    assert str(sandbox.port) in row_of(browser).text  # the list shows the stored Port
    waiting(browser).until(test_in_row, "no test button in the row of blink_edited")
    waiting(browser).until(lambda driver: "Test Connection Failed" in driver.page_source)
    browser.save_screenshot(str(SHOTS / "connection-edited-base-url.png"))
    shown = browser.page_source
    assert f"names port 9, and its Port field says {sandbox.port}: they disagree" in shown, shown[-3000:]
    assert "Clear the Port field" in shown
    cleared = airflow_ui.api(
        "PATCH", "/connections/blink_edited", params={"update_mask": "port"}, json={**made, "port": None}
    )
    assert cleared.ok and cleared.json()["port"] is None, cleared.text
    browser.get(f"{airflow_ui.url}/connections")
    waiting(browser).until(row_of, "blink_edited is not listed")
    assert str(sandbox.port) not in row_of(browser).text  # nothing stale left to read
