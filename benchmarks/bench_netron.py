"""Side by side with Netron: time from opening a model to a rendered graph, on the same files.

    .venv/bin/python benchmarks/bench_netron.py [--nodes 20000] [--runs 3] [--netron-python PY]
                                                [--node-modules DIR] [--chromium /usr/bin/chromium]

Netron 9.3.3 (PyPI `netron`) serves the model; Debian's `chromium`, driven by playwright-core from npm,
opens it headless with a fresh profile per run. Netron waits for a cookie consent unless its `consent`
cookie is set first, and it pings analytics hosts, so every host but 127.0.0.1 fails to resolve. Its graph
counts as rendered when the page has left its loading state (body class `default`) and `svg#canvas` holds
`g.graph-node` elements. Chromium's memory is the PSS of its whole process tree at that moment.
mnnscope's figure is `mnnscope view MODEL --timing` first_paint_s (from its process start).
Skips with a message (exit 0) where Chromium, netron or playwright-core is missing.

Set-up on Debian: apt-get install chromium; pip install netron==9.3.3 (any Python: --netron-python);
npm install playwright-core (in DIR: --node-modules DIR/node_modules). Never `npx playwright install`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from proctree import descendants  # noqa: E402

DRIVER = r"""
const { chromium } = require('playwright-core');
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
(async () => {
  const [url, exe, runs] = [process.argv[2], process.argv[3], Number(process.argv[4])];
  for (let i = 0; i < runs; i++) {
    const browser = await chromium.launch({ executablePath: exe, headless: true,
      args: ['--no-sandbox', '--disable-dev-shm-usage',
             '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1'] });
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    const host = new URL(url).hostname;
    await context.addCookies([{ name: 'consent', value: String(Date.now()), domain: host, path: '/' }]);
    const page = await context.newPage();
    page.on('dialog', (d) => d.accept());
    const t0 = Date.now();
    await page.goto(url, { waitUntil: 'commit', timeout: 600000 });
    // Read state over the DevTools protocol: Netron disables eval in the page itself.
    const cdp = await context.newCDPSession(page);
    const expr = "document.body.classList.contains('default') ? " +
                 "document.querySelectorAll('svg#canvas g.graph-node').length : -1";
    let n = -1;
    while (true) {
      const r = await cdp.send('Runtime.evaluate', { expression: expr, returnByValue: true });
      n = r.result.value;
      if (n > 0) break;
      if (Date.now() - t0 > 600000) { n = 0; break; }
      await new Promise((ok) => setTimeout(ok, 50));
    }
    const seconds = (Date.now() - t0) / 1000;
    console.log(JSON.stringify({ run: i, rendered_s: seconds, graph_nodes: n, pid: process.pid }));
    await lines.next();  // the caller measures memory, then lets us go on
    await browser.close();
  }
  rl.close();
})().catch((e) => { console.log(JSON.stringify({ error: String(e) })); process.exit(1); });
"""


def skip(reason: str) -> int:
    print(f"bench_netron: skipped: {reason}")
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pss_mb(pids) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024.0


def netron_times(model: Path, runs: int, py: str, node_modules: Path, chromium: str) -> list[dict]:
    port = _free_port()
    code = ("import sys, netron; netron.serve(sys.argv[1], address=('127.0.0.1', int(sys.argv[2])), browse=False); "
            "netron.wait()")
    server = subprocess.Popen([py, "-c", code, str(model), str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        with tempfile.TemporaryDirectory() as tmp:
            driver = Path(tmp) / "driver.js"
            driver.write_text(DRIVER)
            env = dict(os.environ, NODE_PATH=str(node_modules))
            node = subprocess.Popen(["node", str(driver), f"http://127.0.0.1:{port}/", chromium, str(runs)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
            rows = []
            for line in node.stdout:
                row = json.loads(line)
                if "error" in row:
                    raise SystemExit(f"bench_netron: the browser driver failed: {row['error']}")
                row["chromium_pss_mb"] = round(_pss_mb(descendants(node.pid)), 1)
                rows.append(row)
                node.stdin.write("next\n")
                node.stdin.flush()
            node.wait(60)
            return rows
    finally:
        server.terminate()
        server.wait(10)


def mnnscope_times(model: Path, runs: int) -> list[dict]:
    from bench_view import view_timings  # same folder: the same measurement as the viewer benchmark
    return view_timings(model, runs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[20000])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--netron-python", default=sys.executable)
    p.add_argument("--node-modules", type=Path, default=ROOT / "benchmarks" / "out" / "node_modules")
    p.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = p.parse_args(argv)
    if not Path(args.chromium).is_file():
        return skip("Chromium is missing (Debian: apt-get install chromium)")
    if subprocess.run([args.netron_python, "-c", "import netron"], capture_output=True).returncode != 0:
        return skip(f"netron is not installed for {args.netron_python} (pip install netron==9.3.3)")
    if not shutil.which("node") or not (args.node_modules / "playwright-core").is_dir():
        return skip(f"node or playwright-core is missing (npm install playwright-core; --node-modules, now "
                    f"{args.node_modules})")
    from bench_view import make_model
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"runs": args.runs, "models": {}}
    for n in args.nodes:
        model = make_model(n, args.out)
        ours = mnnscope_times(model, args.runs)
        theirs = netron_times(model, args.runs, args.netron_python, args.node_modules, args.chromium)
        m_ours = statistics.median(r["first_paint_s"] for r in ours)
        m_theirs = statistics.median(r["rendered_s"] for r in theirs)
        report["models"][str(n)] = {
            "mnnscope_first_paint_s": m_ours, "mnnscope_rss_mb": statistics.median(r["rss_mb"] for r in ours),
            "netron_rendered_s": m_theirs,
            "netron_chromium_pss_mb": statistics.median(r["chromium_pss_mb"] for r in theirs),
            "ratio": m_theirs / m_ours, "mnnscope_runs": ours, "netron_runs": theirs}
        r = report["models"][str(n)]
        print(f"{n:>7} nodes: mnnscope {m_ours:.2f} s ({r['mnnscope_rss_mb']:.0f} MB), Netron {m_theirs:.2f} s "
              f"(Chromium {r['netron_chromium_pss_mb']:.0f} MB PSS): mnnscope is {r['ratio']:.1f}x faster",
              flush=True)
    (args.out / "bench_netron.json").write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out / 'bench_netron.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
