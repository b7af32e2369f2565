"""The few Selenium calls console-browser-test.py makes, over Firefox's own Marionette protocol.

Debian packages Firefox (firefox-esr) but not geckodriver, the WebDriver server Selenium needs
for it, and PyPI has no Linux build of geckodriver either; PyPI's marionette-driver (Mozilla's
client) talks to Firefox directly. These classes give that client the shape of the Selenium
calls the test uses, so one script checks both browsers.
"""
import socket
import time

from marionette_driver import By as MarionetteBy
from marionette_driver.marionette import Alert, Marionette


class By:
    ID = MarionetteBy.ID
    NAME = MarionetteBy.NAME
    CSS_SELECTOR = MarionetteBy.CSS_SELECTOR


class _SwitchTo:
    def __init__(self, client):
        self._client = client

    @property
    def alert(self):
        """The open dialog; raises when there is none (as Selenium's does)."""
        alert = Alert(self._client)
        _ = alert.text
        return alert


class FirefoxDriver:
    """Headless Firefox ESR, with Selenium's names for what the test calls."""

    def __init__(self, log, binary="/usr/bin/firefox-esr"):
        # A free port of this machine's for Marionette (tests may run two browsers at once).
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        # Firefox's own log goes to `log` (by default Marionette writes gecko.log where it runs).
        self._client = Marionette(host="127.0.0.1", port=port, bin=binary, headless=True, startup_timeout=120, gecko_log=log)
        self._client.start_session()
        self._client.set_window_rect(width=1400, height=1100)
        self.switch_to = _SwitchTo(self._client)

    def get(self, url):
        self._client.navigate(url)

    def refresh(self):
        self._client.refresh()

    @property
    def current_url(self):
        return self._client.get_url()

    def execute_script(self, script, *arguments):
        return self._client.execute_script(script, script_args=list(arguments), new_sandbox=False)

    def find_element(self, by, value):
        return self._client.find_element(by, value)

    def find_elements(self, by, value):
        return self._client.find_elements(by, value)

    def save_screenshot(self, path):
        with open(path, "wb") as file:
            file.write(self._client.screenshot(format="binary"))

    def quit(self):
        try:
            self._client.delete_session()
        finally:
            self._client.cleanup()


class Select:
    """Selenium's Select: picks an option of a <select> by its value, as a user's choice does."""

    def __init__(self, element):
        self._element = element

    def select_by_value(self, value):
        self._element.marionette.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
            script_args=[self._element, value], new_sandbox=False)


class WebDriverWait:
    """Selenium's wait: calls `condition(driver)` until it gives something true; an exception it
    raises counts as not yet (a dialog not open yet, an element not there yet)."""

    def __init__(self, driver, timeout):
        self._driver = driver
        self._timeout = timeout

    def until(self, condition):
        deadline = time.monotonic() + self._timeout
        last = None
        while True:
            try:
                value = condition(self._driver)
                if value:
                    return value
            except Exception as error:  # noqa: BLE001 - the condition is retried
                last = error
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {self._timeout} s" + (f" (last: {last})" if last else ""))
            time.sleep(0.1)
