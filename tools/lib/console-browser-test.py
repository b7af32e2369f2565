#!/usr/bin/env python3
"""The console in a real browser: headless Chromium driven by Selenium, or headless Firefox ESR
driven through its Marionette protocol (marionette_adapter.py gives that the same calls).

Run by the Swift test `ConsoleBrowserTests` (tools/test installs chromium, chromium-driver,
firefox-esr, selenium and marionette-driver), which starts `wfctl serve` over a store it wrote
and passes:

    console-browser-test.py BASE_URL ARTIFACTS_DIR EXPECTED_DIFF_JSON CONTROL_URL [chromium|firefox]

It opens the list and filters it, opens an instance and moves through time, checks the diff
shown against `wfctl state --at 7 --diff 3 --json` (EXPECTED_DIFF_JSON), checks that a payload
holding markup is shown as text and never runs, and watches live updates arrive while another
process (counter-demo, which the test runs) appends actions to instance "counter". Then, on a
console started with --allow-control and a token (CONTROL_URL, `/?token=...`), it pauses that
instance of the running process (the appends stop) and unpauses it (they go on). Screenshots go
to ARTIFACTS_DIR. Prints one line per check; exits 1 at the first that fails.
"""
import json
import os
import sys
import time

base, artifacts, expected_diff_path, control_url = sys.argv[1:5]
browser = sys.argv[5] if len(sys.argv) > 5 else "chromium"
if browser == "firefox":
    from marionette_adapter import By, FirefoxDriver, Select, WebDriverWait
else:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
os.makedirs(artifacts, exist_ok=True)
for stale in os.listdir(artifacts):
    if stale.endswith(".png"):
        os.remove(os.path.join(artifacts, stale))


def fail(message):
    print("FAILED: " + message, flush=True)
    # The browser ends with the test: end() skips the `finally` that would quit it.
    if "driver" in globals():
        try:
            driver.quit()
        except Exception:  # noqa: BLE001 - already failing
            pass
    end(1)


def end(code):
    """Exits at once, without the interpreter's shutdown: mozprofile's finalizers (Firefox's
    driver) would print a traceback of their own after the last line."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def check(condition, message):
    if not condition:
        fail(message)
    print("ok: " + message, flush=True)


if browser == "firefox":
    driver = FirefoxDriver(log=os.path.join(artifacts, "gecko.log"))
else:
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1100", "--disable-gpu"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
wait = WebDriverWait(driver, 20)


# The pages update live while another process appends (every 200 ms): everything is read, and
# clicked, in one step inside the page, never through element handles a refresh leaves stale.

def rows(selector):
    """Each row's data attributes and its cells' text."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((row) => ({"
        " id: row.dataset.id, sequence: row.dataset.sequence,"
        " cells: [...row.querySelectorAll('td')].map((cell) => cell.textContent) }));", selector)


def count(selector):
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length;", selector)


def text(selector):
    return driver.execute_script("const node = document.querySelector(arguments[0]); return node ? node.textContent : null;", selector)


def click(selector):
    """Clicks after this call returns (a click that opens a prompt would block the call)."""
    driver.execute_script("const node = document.querySelector(arguments[0]); setTimeout(() => node.click(), 0);", selector)


def record_fields():
    """The record's fields, read in one step in the page (a live update replaces its rows)."""
    return driver.execute_script(
        "const fields = {};"
        "for (const row of document.querySelectorAll('#record tr[data-field]')) fields[row.dataset.field] = row.querySelector('td').textContent;"
        "return fields;")


def timeline_sequences():
    return driver.execute_script(
        "return [...document.querySelectorAll('#timeline tbody tr')].map((row) => row.dataset.sequence);")


try:
    # The list: every instance of the store's first page, live.
    driver.get(base + "/")
    wait.until(lambda d: count("#instances tbody tr") > 0)
    ids = [row["id"] for row in rows("#instances tbody tr")]
    check("c000" in ids and "counter" in ids and len(ids) >= 30, f"the list shows the store's instances ({len(ids)})")
    wait.until(lambda d: text("#live") == "live")
    check(True, "the page holds the live event stream")
    wait.until(lambda d: count("#summary .bar-row") == 6)
    bars = {row.get_attribute("data-status"): row.text for row in driver.find_elements(By.CSS_SELECTOR, "#summary .bar-row")}
    check(bars["completed"].endswith("15") and bars["failed"].endswith("0"), f"the histogram counts the instances by status ({bars})")
    check("waited longest" in (text("#oldest") or ""), f"the oldest waiting instance's age is shown ({text('#oldest')!r})")
    wait.until(lambda d: count("#rates .rates-chart polyline") == 2)
    check("commits/s" in (text("#rates-legend") or ""), f"the chart of commits and entries per second is drawn ({text('#rates-legend')!r})")
    # wfctl serve reads the store from outside the service: the latency section says where it is.
    wait.until(lambda d: text("#latency-note"))
    check("inside the service" in (text("#latency-note") or ""), f"the latency section says where the percentiles are ({text('#latency-note')!r})")
    driver.save_screenshot(os.path.join(artifacts, "console-list.png"))

    # Filtered: the completed ones only.
    Select(driver.find_element(By.NAME, "status")).select_by_value("completed")
    click("#filters button")
    wait.until(lambda d: "status=completed" in d.current_url and count("#instances tbody tr") > 0 and all(
        row["cells"][2] == "completed" for row in rows("#instances tbody tr")))
    completed = [row["id"] for row in rows("#instances tbody tr")]
    check(completed == [f"c{index:03d}" for index in range(1, 30, 2)], f"the status filter keeps the completed ones ({len(completed)})")

    # One instance, in time: at 7 against 3, the diff as wfctl state --diff prints it.
    driver.get(base + "/#/instance/c000?at=7&diff=3")
    wait.until(lambda d: count("#state tr.change") > 0 or count("#no-changes") > 0)
    expected = json.load(open(expected_diff_path))
    shown = [row["cells"] for row in rows("#state tr.change")]
    wanted = [[change["node"], change["field"] or "(all)", change["change"], json.dumps(change.get("before")), json.dumps(change.get("after"))]
              for change in expected["changes"]]
    check(shown == wanted, f"the diff from 3 to 7 is wfctl's: {shown}")
    record = record_fields()
    check(record.get("last sequence") == "9" and record.get("status") == "running", f"the record says what describe says ({record})")
    timeline = [row["cells"][0] for row in rows("#timeline tbody tr")]
    check(timeline == [str(n) for n in range(1, 10)], "the timeline lists every entry")

    # Moving through time: the slider's field to 5, the tree follows.
    field = driver.find_element(By.ID, "at")
    field.clear()
    field.send_keys("5")
    driver.execute_script("arguments[0].dispatchEvent(new Event('change'))", field)
    wait.until(lambda d: "Tree at 5" in (text("#state") or ""))
    state = text("#state table:last-of-type td pre")
    check(state.strip() == "4", f"at 5 the counter holds 4 ({state!r})")
    check("at=5" in driver.current_url, "the address keeps the point in time")
    driver.save_screenshot(os.path.join(artifacts, "console-instance.png"))

    # A payload that holds markup is text, and never runs.
    driver.get(base + "/#/instance/" + "markup%2F%3Cscript%3E")
    wait.until(lambda d: count("#timeline tbody tr") > 1)
    payloads = " ".join(row["cells"][5] for row in rows("#timeline tbody tr"))
    check("<script>window.pwned=1</script>" in payloads and "<img src=x onerror=" in payloads, "markup in a payload is shown as text")
    check(driver.execute_script("return window.pwned === undefined") and count("#timeline img") == 0, "markup in a payload never runs")
    check(text("h1") == "markup/<script>", "an id with markup is its title, as text")

    # Live: another process appends actions; the open instance shows them without a reload.
    driver.get(base + "/#/instance/counter")
    wait.until(lambda d: "last sequence" in record_fields() and text("#live") == "live")
    before = int(record_fields()["last sequence"])
    started = time.monotonic()
    wait.until(lambda d: int(record_fields().get("last sequence", "0")) > before and str(before + 1) in timeline_sequences())
    check(True, f"an action appended by another process appeared, record and timeline, within {time.monotonic() - started:.2f} s, without a reload")
    driver.save_screenshot(os.path.join(artifacts, "console-live.png"))

    # Control, on a console started with --allow-control and a token: pause the running
    # instance (its process applies nothing more), then unpause it.
    driver.get(control_url + "#/instance/counter")
    wait.until(lambda d: count("#actions button") == 6)

    def act(verb, reason):
        click(f"#actions button[data-verb={verb}]")
        wait.until(lambda d: d.switch_to.alert)
        alert = driver.switch_to.alert
        check(verb in alert.text and "counter" in alert.text, f"{verb} asks first ({alert.text!r})")
        alert.send_keys(reason)
        alert.accept()
        wait.until(lambda d: (text("#control-result") or "").startswith(verb + ":"))
        return text("#control-result")

    answer = act("pause", "checking the browser test")
    check(answer.startswith("pause: applied") and "pid" in answer, f"pause applied by the running process ({answer})")
    check(record_fields().get("paused") == "yes", "the record says paused")
    at_pause = int(record_fields()["last sequence"])
    time.sleep(1.0)
    driver.refresh()
    wait.until(lambda d: "last sequence" in record_fields())
    check(int(record_fields()["last sequence"]) == at_pause, "a paused instance applies nothing more")
    answer = act("unpause", "done")
    check(answer.startswith("unpause: applied"), f"unpause applied ({answer})")
    wait.until(lambda d: int(record_fields().get("last sequence", "0")) > at_pause + 1)
    check(True, "unpaused, it goes on")
    requests = text("main")
    check("checking the browser test" in requests, "the control requests list the pause with its reason")
    driver.save_screenshot(os.path.join(artifacts, "console-control.png"))

    # A signal posted from the page, by stable name, after a confirmation.
    driver.get(control_url + "#/signals")
    wait.until(lambda d: count("#post-signal") == 1)
    driver.execute_script(
        "const form = document.getElementById('post-signal');"
        "form.elements.target.value = 'browser:test'; form.elements.value.value = '{\"ok\": true}';"
        "setTimeout(() => form.requestSubmit(), 0);")
    wait.until(lambda d: d.switch_to.alert)
    confirmation = driver.switch_to.alert
    check("browser:test" in confirmation.text, f"a post asks first ({confirmation.text!r})")
    confirmation.accept()
    wait.until(lambda d: (text("#post-result") or "").startswith("posted version"))
    check((text("#post-result") or "").startswith("posted version 1 of "), f"the post is answered with its version ({text('#post-result')!r})")
except Exception as error:  # a timeout or a missing element: what the page showed
    driver.save_screenshot(os.path.join(artifacts, "console-failure.png"))
    fail(f"{type(error).__name__}: {str(error)[:300]}; the page said: {(text('body') or '')[:800]!r}")
finally:
    driver.quit()
print("done", flush=True)
end(0)
