// Package browsertest is the real-browser test of the privnotes kernel: it
// has no Go API. Its test builds privnotes, installs the kernel spec into a
// temporary Jupyter path, registers the demo data sets in a temporary state
// directory, starts Debian's classic Jupyter Notebook (6.x) on a free
// loopback port with a random token and a copy of
// notebooks/quickstart.ipynb, and runs notebook.js, which drives Debian's
// chromium with puppeteer-core: Run All and its rendered outputs, Tab
// completion, Shift-Tab inspection, the pager, Interrupt and Restart.
// Screenshots of every step are written to build/browser/.
//
// It needs the Debian packages jupyter-notebook and chromium and the npm
// modules of package-lock.json; `make test` installs them (as root):
//
//	apt-get install -y -o DPkg::Lock::Timeout=300 jupyter-notebook chromium
//	PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix kernel/browsertest
//
// Without them the test fails with those commands; it never skips.
package browsertest
