// notebook.js drives classic Jupyter Notebook (6.x) in a real Chromium
// against a running notebook server whose privnotes kernel spec and state
// directory browser_test.go prepared. It checks what a user sees: Run All of
// the quickstart notebook, its rendered outputs, Tab completion, Shift-Tab
// inspection, the pager, Interrupt and Restart.
//
//   node notebook.js --url http://127.0.0.1:PORT --token TOKEN \
//       --notebook quickstart.ipynb --shots DIR --profile DIR [--chromium PATH]
//
// Every failed check prints one line "FAIL <step>: <what the user would
// see>" on stdout; the script exits 1 if any failed, 2 if it could not
// start, 0 with a last line "OK" otherwise. A screenshot of every step goes
// to --shots (NN-step.png), so a failure can be looked at.
'use strict';

const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

function parseArgs(argv) {
  const opts = { chromium: '/usr/bin/chromium' };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!['url', 'token', 'notebook', 'shots', 'profile', 'chromium'].includes(key) || i + 1 >= argv.length) {
      throw new Error(`unknown or incomplete argument ${argv[i]}`);
    }
    opts[key] = argv[i + 1];
  }
  for (const k of ['url', 'token', 'notebook', 'shots', 'profile']) {
    if (!opts[k]) throw new Error(`--${k} is required`);
  }
  return opts;
}

// Time limits, generous for 2 shared cores; the quickstart notebook runs in
// a few seconds.
const RUN_ALL_MS = 120000;
const CELL_MS = 30000;
const UI_MS = 20000;

const failures = [];
let shotNo = 0;

function fail(step, msg) {
  failures.push(`${step}: ${msg}`);
  console.log(`FAIL ${step}: ${msg}`);
}

function clip(s, n = 400) {
  s = String(s).replace(/\s+/g, ' ').trim();
  return s.length > n ? s.slice(0, n) + '…' : s;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  fs.mkdirSync(opts.shots, { recursive: true });
  // The flags of the machine's documented headless set-up: no sandbox as
  // root, and no background connections, which a closed network refuses.
  const browser = await puppeteer.launch({
    executablePath: opts.chromium,
    headless: true,
    userDataDir: opts.profile,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--window-size=1280,1000'],
    defaultViewport: { width: 1280, height: 1000 },
  });
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.log(`page error: ${clip(e.message)}`));
    await run(page, opts);
  } finally {
    await browser.close();
  }
}

async function shot(page, opts, name) {
  shotNo++;
  const file = path.join(opts.shots, `${String(shotNo).padStart(2, '0')}-${name}.png`);
  try {
    await page.screenshot({ path: file, fullPage: true });
  } catch (e) {
    console.log(`screenshot ${file}: ${e.message}`);
  }
}

// kernelIdle waits until the kernel indicator shows an idle, connected kernel.
async function kernelIdle(page, ms) {
  await page.waitForFunction(() => {
    const k = window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel;
    const icon = document.querySelector('#kernel_indicator_icon');
    return k && k.is_connected() && icon && icon.classList.contains('kernel_idle_icon');
  }, { timeout: ms, polling: 100 });
}

// cellInfo reads what the page shows for code cell i: its prompt, and the
// text and kinds of its outputs.
async function cellInfo(page, i) {
  return page.evaluate((i) => {
    const c = Jupyter.notebook.get_cell(i);
    const el = c.output_area.element[0];
    const errs = [...el.querySelectorAll('.output_error')].map((e) => e.innerText);
    return {
      prompt: c.input_prompt_number === undefined ? null : c.input_prompt_number,
      text: el.innerText,
      errors: errs,
      streams: [...el.querySelectorAll('.output_stream')].map((e) => e.innerText),
    };
  }, i);
}

// newCell appends a code cell, focuses its editor and types code there as
// a user would; it returns the cell's index.
async function newCell(page, code) {
  const i = await page.evaluate(() => {
    const nb = Jupyter.notebook;
    // Shift+Enter in the last cell leaves an empty cell below: use it.
    const last = nb.get_cell(nb.ncells() - 1);
    if (last.cell_type !== 'code' || last.get_text() !== '' || last.input_prompt_number !== null) {
      nb.insert_cell_at_bottom('code');
    }
    const i = nb.ncells() - 1;
    nb.select(i);
    nb.get_cell(i).element[0].scrollIntoView();
    nb.edit_mode();
    nb.get_cell(i).focus_editor();
    return i;
  });
  await page.keyboard.type(code);
  return i;
}

// setText replaces the text of cell i and puts the cursor at its end.
async function setText(page, i, code) {
  await page.evaluate((i, code) => {
    const nb = Jupyter.notebook;
    const c = nb.get_cell(i);
    nb.select(i);
    nb.edit_mode();
    c.set_text(code);
    c.focus_editor();
    c.code_mirror.execCommand('goDocEnd');
  }, i, code);
}

// execute runs cell i with Shift+Enter and waits until its prompt shows
// an execution count again.
async function execute(page, i, ms = CELL_MS) {
  await page.evaluate((i) => {
    const nb = Jupyter.notebook;
    nb.select(i);
    nb.edit_mode();
    nb.get_cell(i).focus_editor();
    // The cell's outputs come on IOPub and its prompt number with the
    // execute reply on the shell channel: the page may see the reply
    // first (seen right after a restart's reconnection). The kernel
    // publishes "idle" on IOPub after the cell's outputs, so the outputs
    // are in once an idle follows a busy from this point on.
    window.__pnBusy = false;
    window.__pnSettled = false;
    nb.events.on('kernel_busy.Kernel', () => { window.__pnBusy = true; });
    nb.events.on('kernel_idle.Kernel', () => { if (window.__pnBusy) window.__pnSettled = true; });
  }, i);
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');
  await waitDone(page, i, ms);
  await page.waitForFunction(() => window.__pnSettled === true, { timeout: ms, polling: 50 });
  return cellInfo(page, i);
}

async function waitDone(page, i, ms) {
  await page.waitForFunction((i) => {
    const p = Jupyter.notebook.get_cell(i).input_prompt_number;
    return typeof p === 'number';
  }, { timeout: ms, polling: 100 }, i);
}

function pause(ms) {
  return new Promise((res) => setTimeout(res, ms));
}

// step runs one check; a thrown error (a timeout, usually) is its failure,
// and later steps still run.
async function step(page, opts, name, fn) {
  const t0 = Date.now();
  const before = failures.length;
  try {
    await fn();
  } catch (e) {
    fail(name, clip(e.message, 600));
  }
  await shot(page, opts, name);
  console.log(`step ${name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return failures.length === before;
}

async function run(page, opts) {
  const base = opts.url.replace(/\/$/, '');
  await page.goto(`${base}/notebooks/${encodeURIComponent(opts.notebook)}?token=${opts.token}`,
    { waitUntil: 'load', timeout: 60000 });
  // Without an open notebook and a finished Run All every later check
  // would only wait for its own timeout: stop there.
  const opened = await step(page, opts, 'open', async () => {
    await page.waitForFunction(() => window.Jupyter && Jupyter.notebook && Jupyter.notebook._fully_loaded,
      { timeout: 60000 });
    const name = await page.evaluate(() => Jupyter.notebook.metadata.kernelspec.name);
    if (name !== 'privnotes') throw new Error(`the notebook asks for kernel ${name}, not privnotes`);
    await kernelIdle(page, 60000).catch(() => {
      throw new Error('the privnotes kernel did not become idle within 60 s of opening the notebook');
    });
  });

  if (!opened) return;

  const ranAll = await step(page, opts, 'run-all', async () => {
    await page.click('#celllink');
    await page.waitForSelector('#run_all_cells a', { visible: true, timeout: UI_MS });
    await page.click('#run_all_cells a');
    try {
      await page.waitForFunction(() => Jupyter.notebook.get_cells().every(
        (c) => c.cell_type !== 'code' || typeof c.input_prompt_number === 'number'),
      { timeout: RUN_ALL_MS, polling: 200 });
    } catch (e) {
      const left = await page.evaluate(() => Jupyter.notebook.get_cells()
        .map((c, i) => [i, c]).filter(([, c]) => c.cell_type === 'code' && typeof c.input_prompt_number !== 'number')
        .map(([i, c]) => `${i} [${c.input_prompt_number === undefined ? ' ' : c.input_prompt_number}]`));
      throw new Error(`Run All did not finish within ${RUN_ALL_MS / 1000} s; cells not executed: ${left.join(', ')}`);
    }
    await kernelIdle(page, CELL_MS);
    const counts = await page.evaluate(() => Jupyter.notebook.get_cells()
      .filter((c) => c.cell_type === 'code').map((c) => c.input_prompt_number));
    if (counts.some((n, k) => k > 0 && n <= counts[k - 1])) {
      throw new Error(`Run All did not run the cells once each in order: execution counts ${counts.join(', ')}`);
    }
  });

  if (!ranAll) return;

  await step(page, opts, 'outputs', async () => {
    const r = await page.evaluate(() => {
      const cells = Jupyter.notebook.get_cells();
      const errorCells = [];
      let refused = -1;
      cells.forEach((c, i) => {
        if (c.cell_type !== 'code') return;
        if (c.get_text().includes('this line does not run')) refused = i;
        const e = c.output_area.element[0].querySelectorAll('.output_error');
        if (e.length) errorCells.push({ i, text: [...e].map((x) => x.innerText).join('\n') });
      });
      const tables = [...document.querySelectorAll('.output_html table')]
        .filter((t) => t.querySelector('td')).length;
      // The PCA result renders its components as a table, a row per column.
      const pcaCell = cells.find((c) => c.cell_type === 'code' && c.get_text().includes('pca := private_pca('));
      const pcaRows = pcaCell ? pcaCell.output_area.element[0].querySelectorAll('.output_html table tr td').length : -1;
      const imgs = [...document.querySelectorAll('.output_png img')];
      const drawn = imgs.filter((im) => im.complete && im.naturalWidth > 0 && im.src.startsWith('data:image/png')).length;
      const refusedStreams = refused < 0 ? [] : [...cells[refused].output_area.element[0]
        .querySelectorAll('.output_stream')].map((x) => x.innerText);
      // Issue 29: the handle shows the public facts an analyst needs, and
      // %ledger the records of the data sets this notebook opened.
      const htmlOf = (needle) => {
        const c = cells.find((x) => x.cell_type === 'code' && x.get_text().includes(needle));
        return c ? c.output_area.element[0].innerText : null;
      };
      const handle = htmlOf('bc := dataset(');
      const ledgerOut = htmlOf('%ledger');
      return { errorCells, refused, tables, pcaRows, imgs: imgs.length, drawn, refusedStreams, handle, ledgerOut };
    });
    if (r.handle === null) fail('outputs', 'the notebook has no cell with "bc := dataset("');
    else if (!r.handle.includes('public bounds in brackets')) fail('outputs', `the dataset handle does not show its columns' public bounds: ${clip(r.handle)}`);
    if (r.ledgerOut === null) fail('outputs', 'the notebook has no %ledger cell');
    else if (!r.ledgerOut.includes('this session opened: breast_cancer')) fail('outputs', `%ledger does not say it shows the data sets the notebook opened: ${clip(r.ledgerOut)}`);
    if (r.tables < 1) fail('outputs', 'no rendered HTML table with data cells in any output');
    if (r.pcaRows < 0) fail('outputs', 'the notebook has no cell with "pca := private_pca("');
    else if (r.pcaRows < 30) fail('outputs', `the private_pca result shows no HTML table of its loadings (${r.pcaRows} table cells)`);
    if (r.drawn < 2) fail('outputs', `expected the two plots as rendered PNG images, found ${r.drawn} drawn of ${r.imgs}`);
    if (r.refused < 0) {
      fail('outputs', 'the refused-budget cell ("this line does not run") is not in the notebook');
    } else {
      const mine = r.errorCells.find((e) => e.i === r.refused);
      if (!mine) fail('outputs', `the refused-budget cell ${r.refused} shows no error output`);
      else if (!mine.text.includes('BudgetExceeded')) fail('outputs', `the refused-budget cell ${r.refused} shows an error without BudgetExceeded: ${clip(mine.text)}`);
      if (r.refusedStreams.some((s) => s.includes('this line does not run'))) {
        fail('outputs', 'the refused cell printed "this line does not run": it ran before being refused');
      }
    }
    for (const e of r.errorCells) {
      if (e.i !== r.refused) fail('outputs', `cell ${e.i} shows an unexpected error: ${clip(e.text)}`);
    }
    // One screenshot each of the first table, the first plot and the
    // refused cell (the notebook scrolls inside the page, so a full-page
    // screenshot shows only one screen of it).
    for (const [name, sel] of [['table', '.output_html table'], ['plot', '.output_png img']]) {
      const ok = await page.evaluate((sel) => {
        const el = document.querySelector(sel);
        if (el) el.closest('.cell').scrollIntoView();
        return !!el;
      }, sel);
      if (ok) await shot(page, opts, `outputs-${name}`);
    }
    if (r.refused >= 0) {
      await page.evaluate((i) => Jupyter.notebook.get_cell(i).element[0].scrollIntoView(), r.refused);
    }
  });

  // The budget as the ledger has it after Run All, to compare after Restart.
  let budgetBefore = null;
  let work = -1;
  await step(page, opts, 'budget', async () => {
    work = await newCell(page, '%budget breast_cancer');
    const b = await execute(page, work);
    if (b.errors.length) throw new Error(`%budget failed: ${clip(b.errors.join(' '))}`);
    budgetBefore = parseBudget(b.text);
    if (!budgetBefore) throw new Error(`%budget shows no breast_cancer row with budget, spent and remaining ε: ${clip(b.text)}`);
    if (!(budgetBefore.spent > 0)) throw new Error(`%budget shows nothing spent after Run All: ${clip(b.text)}`);
  });

  await step(page, opts, 'complete', async () => {
    const i = await newCell(page, 'private_');
    await page.keyboard.press('Tab');
    let options;
    try {
      await page.waitForSelector('#complete select option', { visible: true, timeout: UI_MS });
      options = await page.$$eval('#complete select option', (os) => os.map((o) => o.textContent));
    } catch (e) {
      const text = await page.evaluate((i) => Jupyter.notebook.get_cell(i).get_text(), i);
      throw new Error(`Tab after "private_" opened no completion list within ${UI_MS / 1000} s (the cell reads ${JSON.stringify(text)})`);
    }
    if (!options.includes('private_pca')) {
      throw new Error(`Tab after "private_" does not offer private_pca; it offers: ${clip(options.join(', '))}`);
    }
    await shot(page, opts, 'complete-list');
    await page.keyboard.press('Escape');
  });

  await step(page, opts, 'inspect', async () => {
    const i = await newCell(page, '');
    await setText(page, i, 'private_pca');
    await page.keyboard.down('Shift');
    await page.keyboard.press('Tab');
    await page.keyboard.up('Shift');
    let tip;
    try {
      await page.waitForFunction(() => {
        const t = document.querySelector('#tooltip');
        return t && t.offsetParent !== null && t.querySelector('.tooltiptext') &&
          t.querySelector('.tooltiptext').innerText.trim() !== '';
      }, { timeout: UI_MS, polling: 100 });
      tip = await page.$eval('#tooltip .tooltiptext', (t) => t.innerText);
    } catch (e) {
      throw new Error(`Shift-Tab on "private_pca" showed no tooltip within ${UI_MS / 1000} s`);
    }
    if (!/private_pca\s*\(/.test(tip) || !/eps/.test(tip)) {
      throw new Error(`the Shift-Tab tooltip of private_pca shows no signature with its eps argument: ${clip(tip)}`);
    }
    await pause(600); // the tooltip fades in
    await shot(page, opts, 'inspect-tooltip');
    await page.evaluate(() => Jupyter.tooltip.remove_and_cancel_tooltip(true));
  });

  await step(page, opts, 'pager', async () => {
    const i = await newCell(page, 'private_pca?');
    const r = await execute(page, i);
    try {
      await page.waitForFunction(() => {
        const p = document.querySelector('#pager');
        const c = document.querySelector('#pager-container');
        return p && p.offsetHeight > 0 && c && c.innerText.includes('private_pca');
      }, { timeout: UI_MS, polling: 100 });
    } catch (e) {
      throw new Error(`"private_pca?" did not open the pager within ${UI_MS / 1000} s; the cell showed ` +
        `${r.text.trim() ? JSON.stringify(clip(r.text, 200)) : 'no output'} (the kernel must answer NAME? with a "page" payload)`);
    }
    if (r.errors.length) throw new Error(`"private_pca?" opened the pager but its cell shows an error: ${clip(r.errors.join(' '))}`);
    if (r.text.trim() !== '') {
      fail('pager', `"private_pca?" opened the pager but also wrote to the cell (as a page payload it should not): ${clip(r.text, 200)}`);
    }
    await pause(800); // the pager slides up
    await shot(page, opts, 'pager-open');
    await page.evaluate(() => Jupyter.pager.collapse());
  });

  await step(page, opts, 'interrupt', async () => {
    const a = await newCell(page, 'kept := 41');
    const ra = await execute(page, a);
    if (ra.errors.length) throw new Error(`"kept := 41" failed: ${clip(ra.errors.join(' '))}`);
    const loop = await newCell(page, 'for {}');
    await page.keyboard.down('Shift');
    await page.keyboard.press('Enter');
    await page.keyboard.up('Shift');
    await page.waitForFunction(() => document.querySelector('#kernel_indicator_icon').classList.contains('kernel_busy_icon'),
      { timeout: UI_MS, polling: 50 });
    await pause(1500);
    const stillRunning = await page.evaluate((i) => Jupyter.notebook.get_cell(i).input_prompt_number === '*', loop);
    if (!stillRunning) throw new Error('"for {}" ended by itself before Interrupt was pressed');
    await shot(page, opts, 'interrupt-running');
    const t0 = Date.now();
    await page.click('button[data-jupyter-action="jupyter-notebook:interrupt-kernel"]');
    try {
      await waitDone(page, loop, 15000);
    } catch (e) {
      throw new Error('"for {}" still runs 15 s after pressing Interrupt');
    }
    const stopped = ((Date.now() - t0) / 1000).toFixed(1);
    console.log(`interrupt: "for {}" stopped ${stopped} s after the click`);
    await kernelIdle(page, CELL_MS);
    const rl = await cellInfo(page, loop);
    if (!rl.errors.length) fail('interrupt', `the interrupted cell shows no error (it shows ${JSON.stringify(clip(rl.text, 200))})`);
    const b = await newCell(page, 'kept + 1');
    const rb = await execute(page, b);
    if (rb.errors.length || !rb.text.includes('42')) {
      throw new Error(`after Interrupt the next cell "kept + 1" should show 42 (variables kept); it shows ` +
        `${JSON.stringify(clip(rb.text, 300))} (the interrupted cell showed ${JSON.stringify(clip(rl.text, 200))})`);
    }
  });

  await step(page, opts, 'restart', async () => {
    await page.evaluate(() => {
      window.__pnReady = false;
      Jupyter.notebook.events.one('kernel_ready.Kernel', () => { window.__pnReady = true; });
    });
    await page.click('#kernellink');
    await page.waitForSelector('#restart_kernel a', { visible: true, timeout: UI_MS });
    await page.click('#restart_kernel a');
    await page.waitForSelector('.modal-footer .btn-danger', { visible: true, timeout: UI_MS });
    await shot(page, opts, 'restart-dialog');
    await page.click('.modal-footer .btn-danger');
    await page.waitForFunction(() => window.__pnReady === true, { timeout: 60000, polling: 100 })
      .catch(() => { throw new Error('the kernel was not ready within 60 s of Restart'); });
    await kernelIdle(page, CELL_MS);
    const a = await newCell(page, 'kept');
    let ra = await execute(page, a);
    if (!ra.errors.length) {
      // The error is an IOPub output: give it time to arrive if the
      // execute reply overtook it (an idle from the front end's own comm
      // messages after the restart can settle execute early).
      await page.waitForFunction((i) => Jupyter.notebook.get_cell(i).output_area.outputs.length > 0,
        { timeout: 10000, polling: 100 }, a).catch(() => {});
      ra = await cellInfo(page, a);
    }
    if (!ra.errors.some((e) => e.includes('undefined: kept'))) {
      fail('restart', `after Restart "kept" should be an undefined name; it shows ${JSON.stringify(clip(ra.text, 200))}`);
    }
    const b = await newCell(page, '%budget breast_cancer');
    const rb = await execute(page, b);
    const after = parseBudget(rb.text);
    if (!after) throw new Error(`after Restart %budget shows no breast_cancer row: ${clip(rb.text)}`);
    if (budgetBefore && (after.spent !== budgetBefore.spent || after.remaining !== budgetBefore.remaining)) {
      throw new Error(`Restart changed the budget: before spent ε=${budgetBefore.spent}, remaining ε=${budgetBefore.remaining}; ` +
        `after spent ε=${after.spent}, remaining ε=${after.remaining}`);
    }
    if (!(after.spent > 0)) throw new Error(`after Restart %budget shows nothing spent: ${clip(rb.text)}`);
  });
}

// parseBudget reads the breast_cancer row of %budget's rendered table: its
// ε figures are the budget, the spent and the remaining.
function parseBudget(text) {
  const row = text.split('\n').find((l) => l.includes('breast_cancer'));
  if (!row) return null;
  const eps = [...row.matchAll(/ε=([0-9.eE+-]+)/g)].map((m) => Number(m[1]));
  if (eps.length < 3 || eps.some(Number.isNaN)) return null;
  return { budget: eps[0], spent: eps[1], remaining: eps[2] };
}

main().then(() => {
  if (failures.length) {
    console.log(`${failures.length} check(s) failed`);
    process.exit(1);
  }
  console.log('OK');
}, (e) => {
  console.log(`FAIL setup: ${e.stack || e.message}`);
  process.exit(2);
});
