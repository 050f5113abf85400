"""Render the reproduction report as one static HTML page: no JavaScript, figures embedded, links relative."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from .claims import DEFAULT_NOISE_Z, VERDICTS, Verdict, fmt

CSS = """
:root {
  --fg: #1f2328; --muted: #59636e; --border: #d8dee4; --soft: #f6f8fa; --accent: #0b5cad;
  --ok: #1a7f37; --ok-bg: #dafbe1; --partly: #9a6700; --partly-bg: #fff4c2;
  --bad: #cf222e; --bad-bg: #ffebe9; --nr: #57606a; --nr-bg: #eaeef2; --nc: #7a3fc8; --nc-bg: #f3e8ff;
  --inc: #0a6e80; --inc-bg: #dcf4f8;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 15.5px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 2.2rem 1.5rem 4rem; }
h1 { font-size: 2rem; line-height: 1.2; margin: 0 0 .4rem; letter-spacing: -.01em; }
h2 { font-size: 1.45rem; margin: 2.8rem 0 .6rem; padding-bottom: .35rem; border-bottom: 1px solid var(--border); }
h3 { font-size: 1.15rem; margin: 0 0 .3rem; display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; }
h4 { font-size: .8rem; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); margin: 1rem 0 .35rem; }
p { margin: .4rem 0 .8rem; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: .84em; overflow-wrap: anywhere; }
.lede { font-size: 1.05rem; color: #333c46; max-width: 52rem; }
.meta { color: var(--muted); font-size: .9rem; }
.muted { color: var(--muted); }
nav.toc { display: flex; flex-wrap: wrap; gap: .3rem .9rem; padding: .7rem 0; margin: 1rem 0 0;
  border-top: 1px solid var(--border); border-bottom: 1px solid var(--border); font-size: .92rem; }
.notice { border-left: 4px solid var(--partly); background: var(--partly-bg); padding: .6rem .9rem; margin: .8rem 0;
  border-radius: 0 6px 6px 0; font-size: .93rem; }
.notice.info { border-color: var(--accent); background: #eef5ff; }
.notice.bad { border-color: var(--bad); background: var(--bad-bg); }
.notice ul { margin: .3rem 0 0; padding-left: 1.2rem; }
.tablewrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; vertical-align: top; padding: .42rem .6rem; border-bottom: 1px solid var(--border); }
th { font-weight: 600; color: #3b434b; background: var(--soft); white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: 600; border-top: 2px solid var(--border); }
.badge { display: inline-block; padding: .08rem .55rem; border-radius: 999px; font-size: .78rem; font-weight: 600;
  white-space: nowrap; line-height: 1.5; border: 1px solid transparent; }
.v-reproduced { color: var(--ok); background: var(--ok-bg); }
.v-partly { color: var(--partly); background: var(--partly-bg); }
.v-inconclusive { color: var(--inc); background: var(--inc-bg); }
.v-setup-ok { color: var(--ok); background: #fff; border-color: #9bd3a9; }
.v-setup-failed { color: var(--bad); background: #fff; border-color: #f0a8a3; }
.v-not-reproduced { color: var(--bad); background: var(--bad-bg); }
.v-not-run { color: var(--nr); background: var(--nr-bg); }
.v-not-checkable { color: var(--nc); background: var(--nc-bg); }
.s-produced { color: var(--ok); background: var(--ok-bg); }
.s-missing { color: var(--bad); background: var(--bad-bg); }
.s-other { color: var(--nr); background: var(--nr-bg); }
.cnt0 { color: #b8c0c8; }
.totals { display: flex; flex-wrap: wrap; gap: .6rem; margin: .8rem 0 1rem; }
.total { flex: 1 1 9rem; border-radius: 8px; padding: .55rem .8rem; }
.total b { display: block; font-size: 1.6rem; line-height: 1.2; font-variant-numeric: tabular-nums; }
.total span { font-size: .85rem; font-weight: 600; }
.bar { display: flex; height: .7rem; width: 9rem; border-radius: 3px; overflow: hidden; background: var(--nr-bg); }
.bar span { display: block; height: 100%; }
.bar .b-reproduced { background: #2da44e; } .bar .b-partly { background: #d4a72c; }
.bar .b-inconclusive { background: #3fb0c4; }
.bar .b-not-reproduced { background: #e5534b; } .bar .b-not-run { background: #afb8c1; }
.bar .b-not-checkable { background: #a371f7; }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: .3rem .8rem; font-size: .9rem;
  margin: .6rem 0; }
dl.legend dd { margin: 0; color: #333c46; }
section.paper > .cite { color: var(--muted); margin-top: -.2rem; }
article.item { border: 1px solid var(--border); border-radius: 10px; padding: 1.1rem 1.3rem 1rem; margin: 1.3rem 0;
  background: #fff; }
article.item.dim { background: #fbfcfd; }
.caption { font-style: italic; color: #333c46; margin: .2rem 0 .5rem; }
.links { font-size: .9rem; margin: .2rem 0 .6rem; }
.links a + a::before { content: "·"; color: var(--muted); padding: 0 .45rem; display: inline-block; }
figure { margin: .8rem 0 1rem; text-align: center; }
figure img { max-width: 100%; max-height: 620px; height: auto; border: 1px solid #eef1f4; border-radius: 4px; }
figcaption { font-size: .82rem; color: var(--muted); margin-top: .25rem; }
.claim { border-left: 4px solid var(--nr); background: var(--soft); border-radius: 0 8px 8px 0; padding: .65rem .9rem;
  margin: .75rem 0; }
.claim.c-reproduced { border-color: #2da44e; } .claim.c-partly { border-color: #d4a72c; }
.claim.c-inconclusive { border-color: #3fb0c4; }
.claim.c-not-reproduced { border-color: #e5534b; } .claim.c-not-checkable { border-color: #a371f7; }
.claim-head { display: flex; flex-wrap: wrap; gap: .35rem .7rem; align-items: center; font-size: .85rem; }
.claim-head .where { color: var(--muted); }
.claim-head code { color: var(--muted); font-size: .78rem; margin-left: auto; }
blockquote { margin: .45rem 0; padding: 0; font-size: 1rem; color: #24292f; }
blockquote::before { content: "\\201C"; color: var(--muted); }
blockquote::after { content: "\\201D"; color: var(--muted); }
table.checks { background: #fff; border: 1px solid var(--border); border-radius: 6px; font-size: .86rem;
  margin: .45rem 0; }
table.checks th { background: #fff; font-size: .78rem; text-transform: uppercase; letter-spacing: .03em;
  color: var(--muted); }
table.checks { table-layout: fixed; }
table.checks col.c1 { width: 45%; } table.checks col.c2 { width: 20%; } table.checks col.c3 { width: 30%; }
table.checks col.c4 { width: 5%; }
.nowrap { white-space: nowrap; }
th.vh { text-align: right; background: var(--soft); padding-left: .25rem; padding-right: .4rem; }
th.vh .badge { font-size: .7rem; padding: .05rem .45rem; }
table.summary td.num { padding-left: .25rem; padding-right: .55rem; }
table.summary .bar { width: 5rem; }
table.summary th { white-space: normal; vertical-align: bottom; }
table.summary th.vh .badge { white-space: normal; text-align: center; }
table.summary th.mk { font-size: .7rem; font-weight: 600; text-align: right; max-width: 5rem; padding-left: .2rem;
  padding-right: .4rem; }
table.summary td:first-child { min-width: 11rem; }
table.summary th.vh .badge { font-size: .66rem; padding: .05rem .35rem; }
.missing-list { font-size: .9rem; }
.missing-list li { margin: .2rem 0; }
.ok { color: var(--ok); font-weight: 700; } .fail { color: var(--bad); font-weight: 700; } .na { color: var(--nr); }
.reason { font-size: .88rem; color: #3b434b; margin: .35rem 0 0; }
.mark { display: inline-block; padding: .02rem .45rem; border-radius: 4px; font-size: .74rem; font-weight: 700;
  white-space: nowrap; border: 1px solid currentColor; }
.mark-unexplained { color: var(--bad); background: #fff; }
.mark-stale { color: var(--partly); background: #fff; }
.mark-depends { color: var(--accent); background: #fff; }
.variants { font-size: .82rem; margin: .3rem 0 0; display: flex; flex-wrap: wrap; gap: .25rem .8rem;
  align-items: center; }
.variants .badge { font-size: .72rem; }
.finding { font-size: .88rem; margin: .4rem 0 0; padding: .35rem .6rem; background: #fff; border-radius: 6px;
  border: 1px solid var(--border); }
.finding.stale { color: var(--muted); border-style: dashed; }
.cause { font-weight: 700; }
.setup-checks { margin: .8rem 0; }
.setup-checks .claim { background: #fff; border-left-style: dashed; }
.alert-counts { display: flex; flex-wrap: wrap; gap: .5rem 1.2rem; font-size: .95rem; margin: .8rem 0; }
.alert-counts b { font-size: 1.25rem; font-variant-numeric: tabular-nums; }
.deps { font-size: .82rem; color: var(--muted); margin: .25rem 0 0; }
.paperval { font-size: .85rem; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 0 1.6rem; }
@media (max-width: 760px) { .grid2 { grid-template-columns: 1fr; } .bar { width: 5rem; } }
.grid2 ul { margin: 0; padding-left: 1.1rem; font-size: .88rem; }
.grid2 li { margin: .15rem 0; }
details { margin: .5rem 0; font-size: .9rem; }
summary { cursor: pointer; color: var(--accent); }
details table { font-size: .84rem; }
.kv td:first-child { white-space: nowrap; }
.small { font-size: .85rem; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; border-top: 1px solid var(--border);
  padding-top: 1rem; }
@media print { details { display: block; } article.item { break-inside: avoid-page; } }
"""

VERDICT_HELP = {
    "reproduced": "every check of the claim passes on the measured numbers, beyond the run-to-run noise",
    "partly": "some of the claim's checks pass and some fail (beyond the noise)",
    "inconclusive": "no check fails, but at least one is decided by less than the run-to-run noise "
                    f"(z = {fmt(DEFAULT_NOISE_Z)} standard errors unless the claims file sets another)",
    "not reproduced": "the measured numbers contradict the claim beyond the noise (checks fail, none passes)",
    "not run": "the item or dataset the claim needs was not run (the reason is given)",
    "not checkable": "the paper gives nothing measurable (e.g. a theorem's rate), or a needed number is missing",
}


def e(text) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def slug(verdict: str) -> str:
    return verdict.replace(" ", "-")


def badge(verdict: str) -> str:
    return f'<span class="badge v-{slug(verdict)}">{e(verdict)}</span>'


def state_badge(state: str) -> str:
    cls = {"produced": "s-produced", "missing": "s-missing"}.get(state, "s-other")
    return f'<span class="badge {cls}">{e(state)}</span>'


def item_time(it) -> str:
    """An item's wall time, with the time of the separate jobs it aggregates when it has any."""
    if it.job_time_s is None:
        return secs(it.wall_time_s)
    return f"{secs(it.wall_time_s)} + {secs(it.job_time_s)} in its jobs"


def total_time(times: dict) -> str:
    out = secs(times.get("sum_item_wall_time_s"))
    if times.get("sum_job_time_s") is not None:
        out += f" + {secs(times['sum_job_time_s'])} in separate jobs"
    return out


def secs(value) -> str:
    if value is None:
        return "—"
    v = float(value)
    if v < 120:
        return f"{v:.1f} s"
    if v < 7200:
        return f"{v / 60:.1f} min"
    return f"{v / 3600:.2f} h"


def value_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return fmt(value) if not isinstance(value, str) else value


def data_uri(path: Path) -> str:
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}.get(
        path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def bar(counts: dict[str, int]) -> str:
    total = sum(counts.values())
    if not total:
        return '<div class="bar" title="no claims"></div>'
    spans = "".join(f'<span class="b-{slug(v)}" style="width:{100 * n / total:.2f}%"></span>'
                    for v, n in counts.items() if n)
    title = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    return f'<div class="bar" title="{e(title)}">{spans}</div>'


def count_cell(n: int) -> str:
    return f'<td class="num{" cnt0" if not n else ""}">{n}</td>'


# ------------------------------------------------------------------------------------------------------ sections

def header(report, any_differ: bool) -> str:
    prov = report.provenance
    git = prov["git"]
    n_items = sum(len(p.items) for p in report.papers)
    produced = sum(1 for p in report.papers for it in p.items if it.state == "produced")
    out = [
        "<header>",
        "<h1>Reproduction report</h1>",
        '<p class="lede">Five papers on differentially private ADMM-based distributed learning, reproduced. Every '
        "checkable claim is quoted from its paper and checked against the numbers this run measured; the verdicts "
        "below are computed, never typed by hand.</p>",
        f'<p class="meta">Generated {e(prov["generated"])} · commit <span class="mono">{e(git["describe"])}</span> · '
        f"{produced} of {n_items} items produced · {len(report.verdicts)} claims · item time "
        f"{total_time(report.times)}</p>",
    ]
    if any_differ:
        out.append('<div class="notice">Some items ran with parameters that differ from '
                   "<code>config/config.yaml</code> (for example the small smoke-test settings). Their numbers "
                   "are not the paper-faithful ones, and neither are the verdicts on them; such items are marked "
                   "below.</div>")
    out.append(alert_counts(report))
    if report.warnings:
        items = "".join(f"<li>{e(w)}</li>" for w in report.warnings)
        out.append(f'<details class="notice info"><summary>{len(report.warnings)} documentation gap(s) in the '
                   f"claims files (the claims are still checked)</summary><ul>{items}</ul></details>")
    out.append("</header>")
    return "\n".join(out)


def alert_counts(report) -> str:
    """First thing on the page: failures without a known cause, verdicts that a choice decides, stale findings."""
    m = report.marks()
    cls = "bad" if m["unexplained"] else "info"
    n_setup = m["setup ok"] + m["setup failed"]
    parts = [f'<span><b>{m["unexplained"]}</b> unexplained failure{_s(m["unexplained"])}</span>',
             f'<span><b>{m["depend_on_choice"]}</b> verdict{_s(m["depend_on_choice"])} '
             f'depend{_s(m["depend_on_choice"] == 1)} on a choice the paper leaves open</span>',
             f'<span><b>{m["stale"]}</b> stale finding{_s(m["stale"])}</span>',
             f'<span><b>{n_setup}</b> setup check{_s(n_setup)}, {m["setup failed"]} failed '
             "(not counted as claims)</span>"]
    return (f'<div class="notice {cls}" id="marks"><div class="alert-counts">{"".join(parts)}</div>'
            "<span class='small'>An <i>unexplained</i> failure is a claim that is partly, inconclusive or not "
            "reproduced (or a failed setup check) without a finding that names its cause "
            "(the paper, a paper inconsistency, one of our choices, or a bug fixed since); the goal is zero.</span>"
            "</div>")


def _s(n) -> str:
    """The plural 's' of a count (for a bool: 's' when true, for a verb after a singular subject)."""
    return ("s" if n else "") if isinstance(n, bool) else ("s" if n != 1 else "")


def toc(report) -> str:
    links = ['<a href="#summary">Summary</a>']
    for p in report.papers:
        if not p.beyond:
            links.append(f'<a href="#{e(p.id)}">{e(p.short)}</a>')
    if any(p.beyond for p in report.papers):
        links.append('<a href="#beyond-the-papers">Beyond the papers</a>')
    links += ['<a href="#privacy">Privacy accounting</a>', '<a href="#provenance">Provenance</a>']
    return f'<nav class="toc">{"".join(links)}</nav>'


def items_cell(counts: dict[str, int], total: int) -> str:
    rest = ", ".join(f"{counts[k]} {k}" for k in ("not run", "missing") if counts[k])
    return (f'<td class="num">{counts["produced"]} / {total}'
            + (f'<div class="muted small">{e(rest)}</div>' if rest else "") + "</td>")


def summary_section(report) -> str:
    counts = report.counts()
    totals = "".join(f'<div class="total v-{slug(v)}"><b>{n}</b><span>{e(v)}</span></div>'
                     for v, n in counts.items())
    head = ("<tr><th>Paper</th><th class='num'>Items</th><th>Claims</th>"
            + "".join(f"<th class='num vh'>{badge(v)}</th>" for v in VERDICTS) + "<th class='num'>Total</th>"
            "<th class='mk' title='verdicts that differ under a variant of a choice the paper leaves open'>"
            "depend on a choice</th><th class='mk' title='failing claims without a finding naming the cause'>"
            "unexplained</th></tr>")
    rows = []
    for p in report.papers:
        vc, mk = p.counts(), p.marks()
        rows.append(
            f'<tr><td><a href="#{e(p.id)}">{e(p.short)}</a></td>'
            f"{items_cell(p.item_counts(), len(p.items))}"
            f"<td>{bar(vc)}</td>" + "".join(count_cell(vc[v]) for v in VERDICTS)
            + f'<td class="num">{sum(vc.values())}</td>'
            + count_cell(mk["depend_on_choice"]) + count_cell(mk["unexplained"]) + "</tr>")
    ic_all = {s: sum(p.item_counts()[s] for p in report.papers) for s in ("produced", "not run", "missing")}
    n_items = sum(len(p.items) for p in report.papers)
    mk = report.marks()
    rows.append(f'<tr class="total"><td>All</td>{items_cell(ic_all, n_items)}<td>{bar(counts)}</td>'
                + "".join(count_cell(counts[v]) for v in VERDICTS)
                + f'<td class="num">{sum(counts.values())}</td>'
                + count_cell(mk["depend_on_choice"]) + count_cell(mk["unexplained"]) + "</tr>")
    legend = "".join(f"<dt>{badge(v)}</dt><dd>{e(VERDICT_HELP[v])}</dd>" for v in VERDICTS)
    legend += (f"<dt>{badge('setup ok')} {badge('setup failed')}</dt><dd>a check of our own construction (a "
               "bisection hit its target, a schedule has the asked shape), shown with its item and never counted "
               "as a claim</dd>"
               f"<dt>{mark('depends')}</dt><dd>the verdict differs under a variant: an alternative setting of a "
               "choice the paper leaves open, shown beside the headline (the default's) verdict</dd>"
               f"<dt>{mark('unexplained')}</dt><dd>a failing verdict without a finding that names its cause</dd>"
               f"<dt>{mark('stale')}</dt><dd>a finding written for a verdict the claim no longer gets</dd>")
    return (f'<section id="summary"><h2>Summary</h2><div class="totals">{totals}</div>'
            f'<div class="tablewrap"><table class="summary"><thead>{head}</thead><tbody>{"".join(rows)}'
            f"</tbody></table></div><dl class='legend'>{legend}</dl>"
            "<p class='small muted'>Items: <i>produced</i> ran and wrote its numbers; <i>not run</i> was skipped "
            "with a reason (e.g. a dataset that cannot be obtained here); <i>missing</i> has no results at all. "
            f"Dataset-fact claims are checked on the processed datasets and counted with their paper.</p>"
            f"{failures(report)}</section>")


def mark(kind: str, text: str = "") -> str:
    label = {"depends": "depends on a choice", "unexplained": "unexplained", "stale": "stale finding"}[kind]
    return f'<span class="mark mark-{kind}">{e(text or label)}</span>'


def failures(report) -> str:
    """The claims that did not (fully) reproduce, first thing after the counts: where to look, and why."""
    order = ("not reproduced", "partly", "inconclusive", "setup failed")
    bad = [(p, v) for p in report.papers for v in p.verdicts if v.verdict in order]
    if not bad:
        return ""
    bad.sort(key=lambda pv: (not pv[1].unexplained, order.index(pv[1].verdict)))
    rows = []
    for p, v in bad:
        f = v.finding
        why = (f'<div class="small"><span class="cause">{e(f["cause"])}:</span> {e(_clip(f["text"], 220))}</div>'
               if f else f"<div>{mark('unexplained')}</div>")
        rows.append(
            f"<tr><td>{badge(v.verdict)}</td><td class='nowrap'>{e(p.short)}"
            f"<div class='muted small'>{e(v.claim.where or v.claim.item or v.claim.source or '')}</div></td>"
            f'<td><a href="#{e(v.claim.id)}">{e(_clip(v.claim.quote, 110))}</a>'
            f"<div class='muted small'>{e(_clip(v.reason, 220))}</div>{why}</td></tr>")
    return ("<h3>Claims that did not reproduce, only partly, or inside the noise</h3>"
            f"<div class='tablewrap'><table class='failures'><tbody>{''.join(rows)}</tbody></table></div>")


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def check_rows(v: Verdict) -> str:
    if not v.checks:
        return ""
    rows = []
    for c in v.checks:
        sign = {"pass": '<span class="ok" title="passes">✓</span>',
                "fail": '<span class="fail" title="fails">✗</span>',
                "inconclusive": '<span class="na" title="inside the noise: inconclusive">≈</span>'}.get(
            c.outcome, '<span class="na" title="not evaluated">?</span>')
        what = f"<code>{e(c.check)}</code>" + (f'<div class="muted small">{e(c.label)}</div>' if c.label else "")
        if c.outcome == "not evaluated":
            measured = f'<span class="na">{e(c.reason)}</span>'
        else:
            measured = e(c.measured) + (f'<div class="muted small">{e(c.reason)}</div>' if c.reason else "")
        rows.append(f"<tr><td>{what}</td><td>{e(c.expected)}</td><td>{measured}</td><td>{sign}</td></tr>")
    return ('<table class="checks"><colgroup><col class="c1"><col class="c2"><col class="c3"><col class="c4">'
            "</colgroup><thead><tr><th>Check</th><th>Expected</th><th>Measured</th><th></th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def claim_card(v: Verdict) -> str:
    c = v.claim
    head = [badge(v.verdict)]
    if v.depends_on_choice:
        head.append(mark("depends", "depends on " + ", ".join(v.depends_on_choice)))
    if v.unexplained:
        head.append(mark("unexplained"))
    if v.stale:
        head.append(mark("stale"))
    if c.where:
        head.append(f'<span class="where">{e(c.where)}</span>')
    if c.paper_value is not None:
        head.append(f'<span class="paperval">paper: <b>{e(value_text(c.paper_value))}</b></span>')
    head.append(f"<code>{e(c.id)}</code>")
    parts = [f'<div class="claim c-{slug(v.verdict)}" id="{e(c.id)}">',
             f'<div class="claim-head">{"".join(head)}</div>', f"<blockquote>{e(c.quote)}</blockquote>"]
    if v.variants:
        parts.append('<div class="variants"><span class="muted">Under variants:</span>' + "".join(
            f'<span title="{e(x.reason)}">{e(x.label)} {badge(x.verdict)}</span>' for x in v.variants) + "</div>")
    parts.append(check_rows(v))
    if v.verdict not in ("reproduced", "setup ok"):  # a reproduced claim's table says it all
        parts.append(f'<p class="reason">{e(v.reason)}</p>')
    if v.finding:
        f = v.finding
        parts.append(f'<p class="finding"><span class="cause">Cause: {e(f["cause"])}.</span> {e(f["text"])}</p>')
    for f in v.stale:
        parts.append(f'<p class="finding stale">{mark("stale")} written for "{e(" / ".join(f["when"]))}" '
                     f'({e(f["cause"])}): {e(f["text"])}</p>')
    for x in v.variants:
        if x.checks and x.verdict != v.verdict:
            parts.append(f'<details><summary>Checks under {e(x.label)} ({e(x.verdict)})</summary>'
                         f'{check_rows(x)}<p class="reason">{e(x.reason)}</p></details>')
    if c.note:
        parts.append(f'<p class="deps">Note: {e(c.note)}</p>')
    if c.depends_on:
        parts.append(f'<p class="deps">Depends on: {e("; ".join(c.depends_on))}</p>')
    parts.append("</div>")
    return "".join(parts)


def kv_table(mapping: dict, docs: dict | None = None) -> str:
    docs = docs or {}
    rows = "".join(
        f"<tr><td><code>{e(k)}</code></td><td class='mono'>{e(value_text(val))}</td>"
        + (f"<td class='muted'>{e(docs.get(k, ''))}</td>" if docs else "") + "</tr>"
        for k, val in sorted(mapping.items()))
    head = "<tr><th>key</th><th>value</th>" + ("<th>meaning</th>" if docs else "") + "</tr>"
    return f'<div class="tablewrap"><table class="kv"><thead>{head}</thead><tbody>{rows}</tbody></table></div>'


def item_card(it, links: dict) -> str:
    state_line = [f"<span>{e(it.title)}</span>", state_badge(it.state)]
    if it.wall_time_s is not None:
        state_line.append(f'<span class="muted small">{item_time(it)}</span>')
    if not it.expected:
        state_line.append('<span class="muted small">(not in the expected list)</span>')
    out = [f'<article class="item{"" if it.state == "produced" else " dim"}" id="{e(it.anchor)}">',
           f"<h3>{''.join(state_line)}</h3>"]
    if it.spec.get("caption"):
        out.append(f'<p class="caption">{e(it.spec["caption"])}</p>')
    link = links.get((it.paper, it.item), {})
    anchors = []
    if link.get("notebook"):
        text = "Rendered notebook" if it.state == "produced" else "Item page"
        anchors.append(f'<a href="{e(link["notebook"])}">{text}</a>')
    if link.get("metrics"):
        anchors.append(f'<a href="{e(link["metrics"])}">metrics.json</a>')
    if anchors:
        out.append(f'<p class="links">{"".join(anchors)}</p>')
    if it.state == "missing":
        out.append(f'<div class="notice bad">Missing: {e(it.reason)}</div>')
    elif it.state != "produced":
        out.append(f'<div class="notice">{e(it.state.capitalize())}: {e(it.reason or "no reason given")}</div>')
    elif it.reason:
        out.append(f'<div class="notice info">{e(it.reason)}</div>')
    if it.note:
        out.append(f'<div class="notice info">{e(it.note)}</div>')
    if it.params_differ:
        out.append('<div class="notice">Ran with parameters that differ from <code>config/config.yaml</code>: '
                   "these are not the paper-faithful numbers.</div>")
    if it.missing_figures and it.state == "produced":
        out.append(f'<div class="notice">Figure not written: {e(", ".join(it.missing_figures))} '
                   f"(named in config/claims/{e(it.paper)}.yaml).</div>")
    for fig in it.figures:
        alt = f"{it.title}: {it.spec.get('caption') or it.item} (reproduced)"
        out.append(f'<figure><img src="{data_uri(fig)}" alt="{e(alt)}">'
                   f"<figcaption>Reproduced: {e(fig.name)}</figcaption></figure>")
    claims = [v for v in it.verdicts if not v.setup]
    setup = [v for v in it.verdicts if v.setup]
    if claims:
        out.append("".join(claim_card(v) for v in claims))
    if setup:
        out.append('<div class="setup-checks"><h4>Setup checks (our own construction; not counted as claims)</h4>'
                   + "".join(claim_card(v) for v in setup) + "</div>")
    if not it.verdicts and it.expected:
        out.append('<p class="muted small">No claims are attached to this item yet.</p>')
    choices = list(dict.fromkeys(it.spec.get("choices", []) + [d for v in it.verdicts for d in v.claim.depends_on]))
    incons = it.spec.get("inconsistencies", [])
    if choices or incons:
        cols = []
        cols.append("<div><h4>Reproduction choices</h4>"
                    + (f"<ul>{''.join(f'<li>{e(c)}</li>' for c in choices)}</ul>" if choices
                       else '<p class="small muted">none listed</p>') + "</div>")
        cols.append("<div><h4>Paper inconsistencies that affect it</h4>"
                    + (f"<ul>{''.join(f'<li>{e(c)}</li>' for c in incons)}</ul>" if incons
                       else '<p class="small muted">none listed</p>') + "</div>")
        out.append(f'<div class="grid2">{"".join(cols)}</div>')
    if it.params:
        src = ("as the run used them (papermill's record)" if it.params_source == "run"
               else "from config/config.yaml (the run's own record was not found)")
        out.append(f"<details><summary>Parameters ({len(it.params)}), {e(src)}</summary>"
                   f"{kv_table(it.params)}</details>")
    if it.metrics:
        out.append(f"<details><summary>All metrics ({len(it.metrics)})</summary>"
                   f"{kv_table(it.metrics, it.metric_docs or {'status': 'ok or not run'})}</details>")
    out.append("</article>")
    return "\n".join(out)


def paper_section(p, links: dict, anchor: str | None = None) -> str:
    vc, ic = p.counts(), p.item_counts()
    out = [f'<section class="paper" id="{e(anchor or p.id)}">',
           f"<h2>{e(p.title)}</h2>"]
    if p.citation:
        out.append(f'<p class="cite">{e(p.citation)} <span class="mono">[{e(p.id)}]</span></p>')
    elif not p.beyond and p.short != p.title:
        out.append(f'<p class="cite">{e(p.short)} <span class="mono">[{e(p.id)}]</span></p>')
    line = ", ".join(f"{n} {v}" for v, n in vc.items() if n) or "no claims yet"
    mk = p.marks()
    extra = "".join(f"; {n} {what}" for n, what in ((mk["depend_on_choice"], "depend on a choice"),
                                                     (mk["unexplained"], "unexplained"),
                                                     (mk["stale"], "with stale findings"),
                                                     (mk["setup ok"] + mk["setup failed"], "setup checks")) if n)
    out.append(f"<p>{ic['produced']} of {len(p.items)} items produced; claims: {e(line)}{e(extra)}.</p>")
    # Item index; items with neither results nor claims are only listed here (no empty card).
    compact = [it for it in p.items if it.state == "missing" and not it.verdicts]
    rows = []
    for it in p.items:
        ivc = {v: 0 for v in VERDICTS}
        for v in it.verdicts:
            if not v.setup:
                ivc[v.verdict] += 1
        cl = ", ".join(f"{n} {v}" for v, n in ivc.items() if n)
        ivc_any = bool(cl)
        if not cl:
            cl = it.reason if it.state != "produced" else "no claims attached"
        name = (f'{e(it.title)} <span class="muted mono">{e(it.item)}</span>' if it.title != it.item
                else f'<span class="mono">{e(it.item)}</span>')
        if it in compact:
            name = f'<span id="{e(it.anchor)}">{name}</span>'
        else:
            name = f'<a href="#{e(it.anchor)}">{name}</a>'
        rows.append(f'<tr><td class="nowrap">{name}</td><td>{state_badge(it.state)}</td>'
                    f"<td>{bar(ivc)}</td><td class='small{'' if ivc_any else ' muted'}'>{e(cl)}</td>"
                    f"<td class='num'>{item_time(it)}</td></tr>")
    out.append('<div class="tablewrap"><table><thead><tr><th>Item</th><th>State</th><th>Claims</th><th></th>'
               f'<th class="num">Time</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    if p.data_verdicts:
        out.append(f'<article class="item" id="{e(p.id)}-datasets"><h3><span>Dataset facts</span></h3>'
                   '<p class="caption">What the paper says about its data, checked on the processed datasets '
                   "(resources/processed/*.json).</p>" + "".join(claim_card(v) for v in p.data_verdicts)
                   + "</article>")
    out += [item_card(it, links) for it in p.items if it not in compact]
    out.append("</section>")
    return "\n".join(out)


def privacy_section(report) -> str:
    out = ['<section id="privacy"><h2>Privacy accounting</h2>',
           "<p>For every private method and setting an item exposes, the privacy loss as the paper bounds it "
           "next to what dp-accounting gives for the same mechanism: its RDP accountant and its (tight) "
           "privacy-loss-distribution accountant, "
           "at the same δ. A dash means the accountant does not apply (e.g. a pure ε-DP mechanism with "
           "Gamma-norm noise) or the item did not provide the number. <i>paper / PLD</i> above 1 means the "
           "paper's bound is looser than the tight accounting.</p>"]
    if not report.privacy:
        out.append('<p class="muted">No item has exposed privacy accounting yet (metric keys '
                   "<code>privacy.&lt;method&gt;.&lt;setting&gt;.paper_eps|rdp_eps|pld_eps|delta</code>).</p>")
        out.append("</section>")
        return "\n".join(out)
    by_paper: dict[str, list] = {}
    for row in report.privacy:
        by_paper.setdefault(row["paper"], []).append(row)
    names = {p.id: p.short for p in report.papers}
    for pid, rows in by_paper.items():
        body = []
        for r in sorted(rows, key=lambda r: (r["method"], r["setting"])):
            vals, meta = r["values"], r["meta"]
            paper_eps, pld = vals.get("paper_eps"), vals.get("pld_eps")
            ratio = (fmt(paper_eps / pld) if isinstance(paper_eps, (int, float)) and isinstance(pld, (int, float))
                     and not isinstance(paper_eps, bool) and pld else "—")
            extra = {k: v for k, v in vals.items() if k not in ("paper_eps", "rdp_eps", "pld_eps", "delta")}
            extra_txt = ", ".join(f"{k} = {value_text(v)}" for k, v in sorted(extra.items()))
            method = e(meta.get("label") or r["method"])
            sub = " · ".join(e(meta[k]) for k in ("mechanism", "bound") if meta.get(k))
            warn = (' <span class="badge v-partly" title="items disagree">differs by item</span>'
                    if r["conflict"] else "")
            body.append(
                f"<tr><td>{method}{f'<div class=muted small>{sub}</div>' if sub else ''}</td>"
                f"<td class='mono'>{e(r['setting'])}{warn}</td>"
                + "".join(f"<td class='num'>{'—' if vals.get(k) is None else e(value_text(vals.get(k)))}</td>"
                          for k in ("paper_eps", "rdp_eps", "pld_eps"))
                + f"<td class='num'>{e(ratio)}</td>"
                + f"<td class='num'>{'—' if vals.get('delta') is None else e(value_text(vals['delta']))}</td>"
                + f"<td class='small'>{e(', '.join(r['items']))}"
                + (f"<div class='muted'>{e(extra_txt)}</div>" if extra_txt else "") + "</td></tr>")
        out.append(f"<h3>{e(names.get(pid, pid))}</h3><div class='tablewrap'><table><thead><tr><th>Method</th>"
                   "<th>Setting</th><th class='num'>Paper's bound ε</th><th class='num'>RDP ε</th>"
                   "<th class='num'>PLD ε</th><th class='num'>paper / PLD</th><th class='num'>δ</th>"
                   f"<th>Items</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>")
    out.append("</section>")
    return "\n".join(out)


def provenance_section(report) -> str:
    prov, times = report.provenance, report.times
    git = prov["git"]
    versions = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
    cfg = ", ".join(f"{k} <span class='mono'>{e(v)}</span>" for k, v in prov["config_files"].items()) or "—"
    cl = ", ".join(f"{k} <span class='mono'>{e(v)}</span>" for k, v in prov["claims_files"].items()) or "—"
    rows = [
        ("Git commit", f"<span class='mono'>{e(git['commit'] or git['describe'])}</span>"
         + (" <span class='badge v-partly'>uncommitted changes</span>" if git.get("dirty") else "")),
        ("Report generated", e(prov["generated"])),
        ("Platform", e(prov["platform"])),
        ("Packages", e(versions)),
        ("Config files (sha256, 16 hex)", cfg),
        ("Claims files (sha256, 16 hex)", cl),
        ("Item wall time, summed",
         f"{total_time(times)} over {times.get('items_timed', 0)} items"),
        ("Run span", (f"{secs(times['elapsed_s'])} from {e(times['first_start'])} to {e(times['last_end'])} "
                      "(first item start to last item end, from file times)") if times.get("elapsed_s") is not None
         else "—"),
    ]
    out = ['<section id="provenance"><h2>Provenance</h2>', '<div class="tablewrap"><table class="kv"><tbody>',
           "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows), "</tbody></table></div>"]
    # datasets
    drows = []
    for name, side in prov["datasets"].items():
        if side.get("available"):
            shapes = ", ".join(f"{k} {'×'.join(str(n) for n in v)}" for k, v in (side.get("arrays") or {}).items())
            srcs = "<br>".join(
                f"{e(Path(rel).name)} <span class='mono' title='{e(s.get('sha256'))}'>{e(str(s.get('sha256'))[:16])}"
                f"</span>" for rel, s in (side.get("sources") or {}).items())
            state = '<span class="badge s-produced">available</span>'
        else:
            shapes = ""
            reason = str(side.get("reason") or "").strip().splitlines()
            srcs = f"<span class='muted'>{e(reason[0] if reason else 'unavailable')}</span>"
            state = '<span class="badge s-other">unavailable</span>'
        opts = ", ".join(f"{k}={v}" for k, v in (side.get("options") or {}).items())
        drows.append(f"<tr><td class='mono nowrap'>{e(name)}</td><td>{state}</td><td class='small'>{e(shapes)}</td>"
                     f"<td class='small'>{srcs}</td><td class='small mono'>{e(opts)}</td></tr>")
    out.append("<h3>Datasets</h3>")
    if drows:
        out.append("<div class='tablewrap'><table><thead><tr><th>Dataset</th><th>State</th><th>Arrays</th>"
                   "<th>Source files (sha256, first 16 hex; hover for all)</th><th>Options</th></tr></thead>"
                   f"<tbody>{''.join(drows)}</tbody></table></div>")
    else:
        out.append("<p class='muted'>No processed datasets found (resources/processed/*.json).</p>")
    # items
    from .provenance import canonical_hash
    irows = []
    for p in report.papers:
        for it in p.items:
            phash = canonical_hash(it.params) if it.params is not None else "—"
            src = {"run": "run", "config": "config.yaml"}.get(it.params_source, "—")
            diff = " <span class='badge v-partly'>differs from config.yaml</span>" if it.params_differ else ""
            irows.append(f"<tr><td class='mono nowrap'>{e(it.paper)}/{e(it.item)}</td><td>{state_badge(it.state)}</td>"
                         f"<td class='num'>{item_time(it)}</td><td class='mono'>{e(phash)}</td>"
                         f"<td>{e(src)}{diff}</td></tr>")
    out.append("<h3>Items</h3><div class='tablewrap'><table><thead><tr><th>Item</th><th>State</th>"
               "<th class='num'>Wall time</th><th>Parameters hash</th><th>Parameters from</th></tr></thead>"
               f"<tbody>{''.join(irows)}</tbody></table></div></section>")
    return "\n".join(out)


def render(report, links: dict) -> str:
    any_differ = any(it.params_differ for p in report.papers for it in p.items)
    papers = [p for p in report.papers if not p.beyond]
    beyond = [p for p in report.papers if p.beyond]
    body = [header(report, any_differ), toc(report), summary_section(report)]
    body += [paper_section(p, links) for p in papers]
    if beyond:
        body.append('<div id="beyond-the-papers"></div>')
        body += [paper_section(p, links) for p in beyond]
    body += [privacy_section(report), provenance_section(report),
             "<footer>Built by <code>repro-dpadmm report</code> from results/*/*/metrics.json, "
             "config/claims/*.yaml and resources/processed/*.json. Machine-readable: "
             '<a href="claims.json">claims.json</a> · <a href="summary.json">summary.json</a>.</footer>']
    return ("<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            "<title>repro-dpadmm: reproduction report</title>"
            f"<style>{CSS}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n")
