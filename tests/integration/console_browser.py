#!/usr/bin/python3
# The console in a real browser: Debian's chromium, headless, driven through chromedriver by
# Selenium (python3-selenium). Run by test_console.sh against a real `ember serve` on loopback:
#   console_browser.py URL USER PASSWORD BACKEND SHOTS_DIR PROGRAM (a static executable to upload)
# One line per check on stdout, "ok WHAT" or "FAIL WHAT: why", for the suite to count.
import json
import sys
import urllib.parse

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

URL, USER, PASSWORD, BACKEND, SHOTS, PROGRAM = sys.argv[1:7]
ORIGIN = urllib.parse.urlsplit(URL)
WAIT_S = 30
# typed in the textarea: spaces, since a tab would move the focus on
HANDLER = """function handler(input) {
    console.log('console-test saw ' + input);
    return 'Hi ' + input + '!';
}
"""


def report(ok, what, why=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": " + why), flush=True)


def browser():
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    # root cannot run Chromium's sandbox; the page is this test's own
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,2100", "--no-first-run", "--disable-extensions"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def with_credentials(user, password):
    return "%s://%s:%s@%s/ui/" % (ORIGIN.scheme, urllib.parse.quote(user),
                                 urllib.parse.quote(password), ORIGIN.netloc)


def responses(d):
    """(status, url) of every response the browser got since the last call"""
    out = []
    for e in d.get_log("performance"):
        m = json.loads(e["message"])["message"]
        if m["method"] == "Network.responseReceived":
            r = m["params"]["response"]
            out.append((r["status"], r["url"]))
    return out


def wait_for(d, what, cond, seen=None):
    """waits for cond; on a timeout, says what seen() (the page's state) was"""
    try:
        WebDriverWait(d, WAIT_S, poll_frequency=0.1,
                      ignored_exceptions=[StaleElementReferenceException]).until(lambda _: cond())
        report(True, what)
        return True
    except TimeoutException:
        report(False, what, "not within %d s%s" % (WAIT_S, ", saw " + repr(seen()) if seen else ""))
        return False


def text(d, id_):
    return d.find_element(By.ID, id_).text


def row(d, name):
    for tr in d.find_elements(By.CSS_SELECTOR, "#functions tbody tr"):
        if tr.get_attribute("data-name") == name:
            return [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
    return None


def wrong_password(d):
    d.get(with_credentials(USER, "not-" + PASSWORD))
    got = responses(d)
    page = [s for s, u in got if urllib.parse.urlsplit(u).path in ("/ui/", "/ui")]
    report(page[:1] == [401], "a wrong password: the page is answered 401", repr(got))
    report(all(s == 401 or u.startswith("data:") for s, u in got),
           "a wrong password: nothing but 401 reaches the browser", repr(got))
    body = d.find_element(By.TAG_NAME, "body").text
    report("hello" not in body and not d.find_elements(By.ID, "functions"),
           "a wrong password: no function and no console on the page", body[:200])
    d.get_log("browser")  # its 401s, logged as errors: expected


def deploy(d, name, code):
    d.find_element(By.ID, "deploy-name").clear()
    d.find_element(By.ID, "deploy-name").send_keys(name)
    Select(d.find_element(By.ID, "deploy-kind")).select_by_value("duktape")
    area = d.find_element(By.ID, "deploy-code")
    area.clear()
    area.send_keys(code)
    d.find_element(By.ID, "deploy-go").click()


def console(d):
    d.get(with_credentials(USER, PASSWORD))
    wait_for(d, "the console lists hello, deployed with curl", lambda: row(d, "hello"))
    r = row(d, "hello") or []
    report(len(r) == 11 and r[4] == "10000", "hello's row counts its 10000 invocations", repr(r))
    backend = {"kvm": "KVM"}.get(BACKEND, BACKEND)
    report(text(d, "backend") == backend, "the host panel names the backend",
           text(d, "backend"))
    if BACKEND == "ptrace":
        report("NO hardware isolation" in text(d, "backend-note"),
               "ptrace is said to have no hardware isolation", text(d, "backend-note"))

    # a handler that does not compile: the API's error, as it gave it
    deploy(d, "console-bad", "function handler( {\n")
    wait_for(d, "a broken handler: the page shows the API's 400",
             lambda: "HTTP 400" in text(d, "deploy-status"))
    answer = text(d, "deploy-answer")
    report("handler.js:" in answer and '"kind": "init"' in answer,
           "a broken handler: the runtime's message and kind, as the API gave them", answer)

    deploy(d, "console-js", HANDLER)
    wait_for(d, "the page deploys a JavaScript function",
             lambda: "HTTP 202" in text(d, "deploy-status"),
             lambda: (text(d, "deploy-status"), text(d, "deploy-answer")))
    wait_for(d, "its row appears", lambda: row(d, "console-js"))

    Select(d.find_element(By.ID, "invoke-name")).select_by_visible_text("console-js")
    d.find_element(By.ID, "invoke-body").send_keys("browser")
    d.find_element(By.ID, "invoke-go").click()
    wait_for(d, "the page invokes it and shows the answer",
             lambda: text(d, "invoke-answer") == "Hi browser!")
    report(text(d, "invoke-status").startswith("200"), "the answer's status is 200",
           text(d, "invoke-status"))
    report(text(d, "invoke-start") in ("warm", "restore", "cold", "init"),
           "the answer's start kind is shown", text(d, "invoke-start"))
    d.find_element(By.CSS_SELECTOR, "#invoke-result summary").click()
    report("x-ember-start: " in text(d, "invoke-headers-out"), "the answer's headers are shown",
           text(d, "invoke-headers-out"))
    wait_for(d, "its row counts one invocation",
             lambda: (row(d, "console-js") or [""] * 5)[4] == "1")
    wait_for(d, "the function is selected", lambda: text(d, "fn-name") == "console-js")
    wait_for(d, "its log line, written by the handler, follows live",
             lambda: "console-test saw browser" in text(d, "fn-log"))
    charts = d.execute_script("return Object.keys(Chart.instances).length")
    report(charts == 4, "four charts drawn by Chart.js", repr(charts))
    env = text(d, "fn-deployment")
    report("kind\nruntime duktape" in env, "its deployment is shown", env[:200])
    d.save_screenshot(SHOTS + "/console.png")

    # a program uploaded from the page: its image first, then its deployment
    d.find_element(By.ID, "deploy-name").clear()
    d.find_element(By.ID, "deploy-name").send_keys("console-c")
    Select(d.find_element(By.ID, "deploy-kind")).select_by_value("image")
    d.find_element(By.ID, "deploy-file").send_keys(PROGRAM)
    d.find_element(By.ID, "deploy-go").click()
    wait_for(d, "the page uploads a program and deploys it",
             lambda: "deploy: HTTP 202" in text(d, "deploy-status"),
             lambda: (text(d, "deploy-status"), text(d, "deploy-answer")))
    wait_for(d, "its row names its image", lambda: (row(d, "console-c") or ["", ""])[1] == "image console-c")
    # hello's charts, moved by its 10000 invocations: its row clicked until hello is shown (the
    # table is drawn anew as the list refreshes: a row found just before is stale then, and
    # wait_for tries again)
    def hello_shown():
        if text(d, "fn-name") != "hello":
            for tr in d.find_elements(By.CSS_SELECTOR, "#functions tbody tr"):
                if tr.get_attribute("data-name") == "hello":
                    tr.click()
        return text(d, "fn-name") == "hello" and text(d, "fn-exits") not in ("…", "—")
    wait_for(d, "hello's charts: its figures", hello_shown)
    d.save_screenshot(SHOTS + "/console-hello.png")


def main():
    d = browser()
    try:
        wrong_password(d)
        console(d)
        got = responses(d)
        outside = [u for _, u in got if not u.startswith("data:") and
                   (urllib.parse.urlsplit(u).hostname != ORIGIN.hostname or
                    urllib.parse.urlsplit(u).port != ORIGIN.port)]
        report(got and not outside, "the page asked nothing of another server", repr(outside))
        # the broken handler's 400, which Chromium logs as a failed load, is expected
        expected = "/system/functions - Failed to load resource: the server responded with a " \
            "status of 400"
        errors = [e["message"] for e in d.get_log("browser")
                  if e["level"] == "SEVERE" and expected not in e["message"]]
        report(not errors, "no error in the browser's console (CSP included)", repr(errors))
    finally:
        d.quit()


main()
