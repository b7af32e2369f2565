# Sourced by tools/test and tools/demo: installs what the build needs when it is missing.
# Today that is the system LMDB library (Debian: liblmdb-dev) and pkg-config to find it.

ensure_dependencies() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists lmdb; then
        return 0
    fi
    echo "==> liblmdb-dev (or pkg-config) is missing: installing it with apt-get"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
            echo "error: need root (or sudo) to run: apt-get install -y liblmdb-dev pkg-config" >&2
            return 1
        fi
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq liblmdb-dev pkg-config >/dev/null
    pkg-config --exists lmdb || { echo "error: pkg-config still cannot find lmdb after installing liblmdb-dev" >&2; return 1; }
}

# ensure_package PKGCONFIG_NAME DEBIAN_PACKAGE: installs DEBIAN_PACKAGE when pkg-config lacks the module.
ensure_package() {
    if pkg-config --exists "$1"; then return 0; fi
    echo "==> $2 is missing: installing it with apt-get"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$2" >/dev/null
}

# ensure_browser: headless Chromium, its WebDriver and Selenium (PyPI), and Firefox ESR with
# Mozilla's Marionette client (PyPI: marionette-driver; Debian has no geckodriver), for the
# console's browser test (Tests/WorkflowConsoleTests/ConsoleBrowserTests.swift, run when
# WORKFLOW_TEST_BROWSER=1, in each browser of WORKFLOW_TEST_BROWSERS).
ensure_browser() {
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 || ! command -v firefox-esr >/dev/null 2>&1; then
        echo "==> chromium, chromium-driver or firefox-esr is missing: installing them with apt-get"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver firefox-esr >/dev/null
    fi
    local module
    for module in selenium:selenium marionette_driver:marionette-driver; do
        if ! python3 -c "import ${module%%:*}" >/dev/null 2>&1; then
            echo "==> ${module#*:} is missing: installing it with pip"
            python3 -m pip install --quiet "${module#*:}" || python3 -m pip install --quiet --break-system-packages "${module#*:}"
        fi
    done
}
