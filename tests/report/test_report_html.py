"""The built report on a synthetic project: the site's pages, claims.json, every expected item listed, no broken
link, the compact claims table with its paper value, ours, difference and verdict."""

from __future__ import annotations

import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from _report_synth import make_project

from repro_dpadmm.config_doc import parameter_descriptions
from repro_dpadmm.registry import PAPERS
from repro_dpadmm.claims import CLASS_VERDICTS
from repro_dpadmm.report import build_report


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = make_project(tmp_path_factory.mktemp("synth") / "project")
    report = build_report("results/report", root=root)
    return root, report, root / "results" / "report"


CITATION_HOSTS = ("https://doi.org/", "https://arxiv.org/abs/")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                self.refs.append((tag, name, attrs[name]))


def broken_links(html_path: Path) -> list[str]:
    """Every href/src of the page that does not resolve (relative file missing, or #anchor without its id)."""
    parser = Links()
    parser.feed(html_path.read_text())
    broken = []
    for tag, name, ref in parser.refs:
        url = urlparse(ref)
        if url.scheme == "data":
            if "base64," not in ref or len(ref) < 100:
                broken.append(f"<{tag} {name}> empty data URI")
            continue
        if tag == "a" and name == "href" and any(ref.startswith(h) for h in CITATION_HOSTS):
            continue   # a paper's DOI or preprint: a link the reader may follow, never loaded by the page
        if url.scheme or ref.startswith("//"):
            broken.append(f"<{tag} {name}={ref!r}> is not a relative link (the page must work offline)")
            continue
        if not url.path:
            if url.fragment and url.fragment not in parser.ids:
                broken.append(f"<{tag} {name}={ref!r}>: no element with id {url.fragment!r}")
            continue
        if not (html_path.parent / unquote(url.path)).is_file():
            broken.append(f"<{tag} {name}={ref!r}>: no file {url.path}")
    return broken


def site_pages(out: Path) -> list[Path]:
    """The report's own pages (not the copies of the rendered notebooks under items/)."""
    return sorted(out.glob("*.html")) + sorted(out.glob("claims/*.html"))


def page_of(out: Path, paper: str) -> str:
    return (out / f"{paper}.html").read_text()


def test_outputs_written(built):
    _, report, out = built
    for name in ("index.html", "claims.json", "summary.json", "privacy.html", "provenance.html"):
        assert (out / name).is_file()
    for p in report.papers:  # one page per paper
        assert (out / f"{p.id}.html").is_file()
    assert (out / "claims/huang2019_dpadmm.yaml.html").is_file()


def test_no_broken_relative_link_or_image(built):
    _, _, out = built
    for page in site_pages(out):
        assert broken_links(page) == [], page.name
    parser = Links()
    parser.feed(page_of(out, "huang2019_dpadmm"))
    images = [r for t, n, r in parser.refs if t == "img"]
    # figures are files beside their PDF and data, linked (the index stays small), never data URIs
    assert images == ["items/huang2019_dpadmm/fig1/fig1.png"]
    hrefs = [r for t, n, r in parser.refs if t == "a"]
    assert "items/huang2019_dpadmm/fig1/fig1.html" in hrefs and "claims.json" in hrefs
    assert "items/huang2019_dpadmm/fig1/fig1.png" in hrefs  # the figure opens at full size
    assert "claims/huang2019_dpadmm.yaml.html#L" + str(_line_of(out, "huang2019_dpadmm.fig1.error_tiny")) in hrefs


def _line_of(out: Path, claim_id: str) -> int:
    return next(r["line"] for r in json.loads((out / "claims.json").read_text()) if r["id"] == claim_id)


def test_every_claim_links_to_its_line_in_its_claims_file(built):
    root, _, out = built
    index = (out / "index.html").read_text()
    for r in json.loads((out / "claims.json").read_text()):
        link = f"claims/{r['file']}.html#L{r['line']}"
        assert link in page_of(out, r["paper"]), r["id"]
        if not r["setup"]:
            assert link in index, r["id"]
        source = (root / "config" / "claims" / r["file"]).read_text().splitlines()
        declared = r["group"] or r["id"]        # a claim over cases links to where it is declared once
        assert declared.rsplit(".", 1)[-1] in "\n".join(source[r["line"] - 1: r["line"] + 1]), r["id"]
        assert f'id="L{r["line"]}"' in (out / "claims" / f"{r['file']}.html").read_text()


def test_figures_come_with_their_pdf_data_and_notebook_and_no_reproduced_caption(built):
    root, _, out = built
    fig_dir = root / "results/huang2019_dpadmm/fig1"
    (fig_dir / "fig1.pdf").write_bytes(b"%PDF-1.4 synthetic")
    (fig_dir / "fig1.csv").write_text("panel,series,kind,x,y\n1,n = 10,line,1,0.5\n")
    try:
        build_report("results/report", root=root)
        page = page_of(out, "huang2019_dpadmm")
        fig = page[page.index("<figure"):page.index("</figure>")]
        for ref in ("items/huang2019_dpadmm/fig1/fig1.pdf", "items/huang2019_dpadmm/fig1/fig1.csv",
                    "items/huang2019_dpadmm/fig1/fig1.html"):
            assert ref in fig and (out / ref).is_file()
        # the caption counts the item's verdicts; a figure whose claims failed is never called "reproduced"
        assert "Reproduced:" not in page and "(reproduced)" not in fig
        assert "1 not reproduced" in fig and "reproduced" in fig
    finally:
        (fig_dir / "fig1.pdf").unlink()
        (fig_dir / "fig1.csv").unlink()
        build_report("results/report", root=root)


def test_the_page_survives_being_copied_elsewhere(built, tmp_path):
    import shutil

    _, _, out = built
    copy = tmp_path / "copied-report"
    shutil.copytree(out, copy)
    assert broken_links(copy / "index.html") == []


def test_claims_json_one_record_per_claim_with_the_expected_verdicts(built):
    _, report, out = built
    records = {r["id"]: r for r in json.loads((out / "claims.json").read_text())}
    assert len(records) == len(report.verdicts)
    for r in records.values():
        assert r["verdict"] in CLASS_VERDICTS[r["class"]] and r["setup"] is (r["class"] == "setup")
        assert set(r) >= {"id", "paper", "item", "quote", "expected", "measured", "verdict", "reason"}
        assert r["reason"]
    got = {k: r["verdict"] for k, r in records.items()}
    assert got["huang2019_dpadmm.fig1.accuracy_decreases_with_n"] == "reproduced"
    assert got["huang2019_dpadmm.fig1.error_tiny"] == "not reproduced"
    assert got["huang2019_dpadmm.fig1.rate"] == "not checkable"
    assert got["huang2019_dpadmm.fig1.needs_missing_key"] == "not checkable"
    assert "el_final.n200" in records["huang2019_dpadmm.fig1.needs_missing_key"]["reason"]
    assert got["huang2019_dpadmm.fig2.aov_converges"] == "not run"
    assert records["huang2019_dpadmm.fig2.aov_converges"]["reason"] == "dataset unavailable (adult: test)"
    assert got["huang2019_dpadmm.fig3.beats_dpsgd"] == "not run"
    assert got["xu2020_dpaccadmm.table1.bio_size"] == "not run"
    # dataset facts, from the sidecars (build-enforced: setup checks): HUANG's 45,222 x 104 holds, ZKL's 45,223 not
    assert got["huang2019_dpadmm.data.adult_size"] == "setup ok"
    assert got["zhang2018_madmm.data.adult_rows"] == "setup failed"
    # the classes: a formula against a formula is analytic, a table of given sizes setup, a comparison with a
    # method no better than the constant classifier degenerate
    assert got["huang2019_dpadmm.fig1.accountant_is_loose"] == "holds"
    assert records["huang2019_dpadmm.fig1.accountant_is_loose"]["class"] == "analytic"
    assert got["xu2020_dpaccadmm.table1.a9a_size"] == "setup ok"
    assert got["huang2019_dpadmm.fig1.dvp_better_than_dpadmm"] == "degenerate"
    assert "err.dvp = 0.31 is no better than err.const = 0.3" in records["huang2019_dpadmm.fig1.dvp_better_than_dpadmm"]["reason"]
    assert got["hu2020_sharing.data.gisette_size"] == "not run"


def test_every_expected_item_is_listed_with_its_state(built):
    _, report, out = built
    page = "".join(p.read_text() for p in site_pages(out))
    states = {(p.id, it.item): it for p in report.papers for it in p.items}
    for paper, items in ((p.id, p.item_ids) for p in PAPERS):
        for item in items:
            it = states[(paper, item)]
            assert f'id="{paper}-{item}"' in page_of(out, paper), f"{paper}/{item} not on its paper's page"
            assert it.state in ("produced", "not run", "missing")
            if it.state != "produced":
                assert it.reason
    assert states[("huang2019_dpadmm", "fig1")].state == "produced"
    assert states[("huang2019_dpadmm", "fig2")].state == "not run"
    assert states[("huang2019_dpadmm", "fig3")].state == "missing"
    assert "metrics.json" in states[("huang2019_dpadmm", "fig4")].reason  # a folder without metrics.json
    assert states[("huang2019_dpadmm", "extra_item")].state == "produced"   # unexpected items are shown too
    summary = json.loads((out / "summary.json").read_text())
    huang = summary["papers"]["huang2019_dpadmm"]
    # an item the registry does not list is shown, never counted as produced (a bundle's folder cannot pad the count)
    assert huang["items"] == {"produced": 1, "not run": 1, "missing": 5, "unlisted": 1}
    assert "1 of 7 items produced (and 1 the registry does not list: shown, not counted)" in page_of(
        out, "huang2019_dpadmm")
    assert sum(summary["claims"].values()) == len([v for v in report.verdicts if v.claim_class == "measured"])
    # the time of the jobs an item aggregates is shown beside its own and summed apart, never dropped
    assert huang["item_states"]["extra_item"]["job_time_s"] == 125.0
    assert huang["item_states"]["fig1"]["job_time_s"] is None
    assert report.times["sum_job_time_s"] == 125.0
    assert "1.0 s + 2.1 min in its jobs" in page and "+ 2.1 min in separate jobs" in page
    assert states[("huang2019_dpadmm", "extra_item")].note == "Winner at every level: method X."
    assert "Winner at every level: method X." in page


def test_privacy_and_provenance_pages(built):
    _, report, out = built
    page = "".join(p.read_text() for p in site_pages(out))
    rows = {(r["method"], r["setting"]): r for r in report.privacy}
    assert rows[("dpadmm", "eps0.1_delta1e-4")]["values"] == {
        "paper_eps": 1.0146, "rdp_eps": 1.21, "pld_eps": 0.93, "delta": 1e-4}
    assert ("dvp", "eps0.1") in rows
    assert "1.015" in page and "0.93" in page
    assert 'id="provenance"' in page and "5b00264637dbfec3" in page  # dataset checksum from the sidecar
    assert "Beyond the papers" in page
    fig1 = next(it for p in report.papers for it in p.items if (p.id, it.item) == ("huang2019_dpadmm", "fig1"))
    assert fig1.params_source == "run" and not fig1.params_differ
    # the parameter table gives each key's meaning from the config schema (a key the schema lacks gets none)
    repeats_doc = parameter_descriptions("huang2019_dpadmm", "fig1")["repeats"]
    assert fig1.param_docs["repeats"] == repeats_doc and "n" not in fig1.param_docs
    assert "<th>meaning</th>" in page and html.escape(repeats_doc).replace("&quot;", "&#34;") in page
    table1 = next(it for p in report.papers for it in p.items if (p.id, it.item) == ("xu2020_dpaccadmm", "table1"))
    assert table1.params_differ  # ran with repeats: 1, which config.yaml does not say
    assert "differ from <code>config/config.yaml</code>" in page
    assert "repeats = 1 (paper: unset)" in page_of(out, "xu2020_dpaccadmm")  # how it differs, key by key
    assert "<script src" not in page.lower() and "http" not in "".join(re.findall(r"<script>.*?</script>", page,
                                                                                 re.S))


def test_report_on_an_empty_project_lists_everything_as_missing(tmp_path):
    (tmp_path / "Snakefile").write_text("")
    report = build_report(tmp_path / "out", root=tmp_path)
    n_expected = sum(len(p.item_ids) for p in PAPERS)
    assert sum(len(p.items) for p in report.papers) == n_expected
    assert all(it.state == "missing" for p in report.papers for it in p.items)
    assert json.loads((tmp_path / "out" / "claims.json").read_text()) == []
    assert broken_links(tmp_path / "out" / "index.html") == []


def test_unreadable_metrics_do_not_crash_the_report(tmp_path):
    root = make_project(tmp_path / "p")
    (root / "results" / "zhang2018_madmm" / "fig1").mkdir(parents=True)
    (root / "results" / "zhang2018_madmm" / "fig1" / "metrics.json").write_text("{not json")
    report = build_report("results/report", root=root)
    it = next(i for p in report.papers for i in p.items if (p.id, i.item) == ("zhang2018_madmm", "fig1"))
    assert it.state == "missing" and "unreadable metrics.json" in it.reason


@pytest.mark.parametrize("text, where", [
    ("claims:\n  - id: zhang2018_madmm.fig1.a\n    quote: [unclosed\n", "zhang2018_madmm.yaml:4: not valid YAML"),
    ("claims:\n  - id: zhang2018_madmm.fig1.a\n    item: fig1\n    quote: q\n    checks:\n"
     "      - {kind: less, left: a}\n", "zhang2018_madmm.yaml:6: claims[0] (id 'zhang2018_madmm.fig1.a').checks[0]: "
                                      "'right' is a required property"),
])
def test_a_broken_claims_file_fails_the_report_loudly_with_file_and_line(tmp_path, monkeypatch, capsys, text, where):
    from repro_dpadmm.cli import main
    from repro_dpadmm.claims import ClaimsError

    root = make_project(tmp_path / "p")
    (root / "config" / "claims" / "zhang2018_madmm.yaml").write_text(text)
    with pytest.raises(ClaimsError, match=re.escape(where)):
        build_report("results/report", root=root)
    assert not (root / "results" / "report" / "index.html").exists()
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    monkeypatch.chdir(root)
    assert main(["report", "--out-dir", "results/report"]) == 1
    assert where in capsys.readouterr().err


def test_cli_report_command(tmp_path, monkeypatch):
    from repro_dpadmm.cli import main

    root = make_project(tmp_path / "p")
    monkeypatch.setenv("REPRO_DPADMM_ROOT", str(root))
    monkeypatch.chdir(root)
    assert main(["report", "--out-dir", "results/report"]) == 0
    assert (root / "results" / "report" / "index.html").is_file()
    assert os.path.getsize(root / "results" / "report" / "claims.json") > 100


class Balance(HTMLParser):
    VOID = {"meta", "img", "br", "col", "hr", "link", "input", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append((tag, self.getpos()))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"</{tag}> at {self.getpos()} closes {self.stack[-1] if self.stack else 'nothing'}")
        else:
            self.stack.pop()


def test_html_is_well_nested(built):
    _, _, out = built
    parser = Balance()
    parser.feed((out / "index.html").read_text())
    assert parser.errors == [] and parser.stack == []


def test_claims_json_and_summary_carry_noise_variants_findings_and_setup(built):
    _, report, out = built
    records = {r["id"]: r for r in json.loads((out / "claims.json").read_text())}
    noisy = records["huang2019_dpadmm.fig1.beats_dpsgd_noisy"]
    assert noisy["verdict"] == "inconclusive" and noisy["checks"][0]["outcome"] == "inconclusive"
    assert noisy["checks"][0]["paired"] and noisy["checks"][0]["se"] > 0 and noisy["noise_z"] == 2.0
    assert [(v["name"], v["verdict"]) for v in noisy["variants"]] == [("dpsgd_sum", "reproduced")]
    assert noisy["depends_on_choice"] == ["dpsgd_convention"]
    assert noisy["cause"] == "choice" and noisy["deciding"] == ["DPSGD sum convention: reproduced"]
    assert noisy["finding"]["cause"] == "choice" and not noisy["unexplained"] and noisy["stale"] == []
    assert records["huang2019_dpadmm.fig1.error_tiny"]["unexplained"] is True
    assert records["huang2019_dpadmm.fig1.error_tiny"]["cause"] == "paper"          # no reading makes it pass
    assert records["huang2019_dpadmm.fig1.error_near_centralised"]["stale"][0]["when"] == ["not reproduced"]
    assert records["huang2019_dpadmm.fig1.error_near_centralised"]["cause"] == "robust"
    setup = records["huang2019_dpadmm.fig1.bisection_hit_target"]
    assert setup["setup"] is True and setup["verdict"] == "setup ok"
    summary = json.loads((out / "summary.json").read_text())
    huang = summary["papers"]["huang2019_dpadmm"]
    assert huang["marks"] == {"depend_on_choice": 2, "depend_on_threshold": 0, "unexplained": 1, "stale": 1,
                              "typed_numbers": 0, "rule_without_range": 3, "looser_threshold": 1, "setup ok": 3,
                              "setup failed": 0}
    assert huang["folded"]["measured"]["causes"] == {"robust": 2, "choice": 2, "degenerate": 1, "paper": 1}
    assert huang["claims"]["inconclusive"] == 2 and huang["claims"]["degenerate"] == 1
    assert huang["analytic"] == {"holds": 1, "fails": 0, "not run": 0, "not checkable": 0}
    assert summary["setup"]["setup failed"] == 2        # the two ZKL papers' row count
    blamed = records["huang2019_dpadmm.fig1.dpsgd_beats_dpadmm_sum"]     # its finding says "paper"; the engine
    assert blamed["cause"] == "choice" and blamed["depends_on_choice"] == ["dpsgd_convention"]   # computes choice
    near = records["huang2019_dpadmm.fig1.error_near_centralised"]
    assert near["looser"] and near["checks"][1]["looser"] == "the bound 0.2 is looser than the paper's 0.16"
    assert near["checks"][0]["from"].startswith("§VI-E")
    assert summary["marks"]["unexplained"] == report.marks()["unexplained"] >= 1


def test_a_setup_check_never_raises_the_reproduced_count(built):
    _, report, _ = built
    huang = next(p for p in report.papers if p.id == "huang2019_dpadmm")
    n_setup_ok = sum(1 for v in huang.verdicts if v.verdict == "setup ok")
    n_analytic = sum(1 for v in huang.verdicts if v.claim_class == "analytic")
    assert n_setup_ok == 3 and n_analytic == 1
    assert huang.counts()["reproduced"] == sum(1 for v in huang.verdicts if v.verdict == "reproduced")
    assert sum(huang.counts().values()) == len(huang.verdicts) - n_setup_ok - n_analytic


def test_page_shows_variants_causes_and_marks(built):
    _, report, out = built
    index = (out / "index.html").read_text()
    top = index.index('id="claims"')
    m = report.marks()
    assert index.index('id="marks"') < top                               # the counts come first
    assert f"<b>{m['unexplained']}</b> unexplained failures" in index[:top]
    assert f"<b>{m['depend_on_choice']}</b> depend on a choice" in index[:top]
    assert f"<b>{m['typed_numbers']}</b> with numbers typed into a finding" in index[:top]
    page = page_of(out, "huang2019_dpadmm")
    blamed = page[page.index('id="huang2019_dpadmm.fig1.dpsgd_beats_dpadmm_sum"'):][:6000]
    assert "<b>Cause: choice</b> (decided by DPSGD sum convention: reproduced)" in blamed
    analytic = page.index("Analytic claims (formulas of config values")
    assert page.index('id="huang2019_dpadmm.fig1.accountant_is_loose"') > analytic
    assert "threshold from: rule: an error below 0.2" in page and "mark-looser" in page
    card = page[page.index('id="huang2019_dpadmm.fig1.beats_dpsgd_noisy"'):]
    card = card[:card.index("</blockquote>")]
    assert "depends on dpsgd_convention" in card and 'v-inconclusive' in card
    after = page[page.index('id="huang2019_dpadmm.fig1.beats_dpsgd_noisy"'):]
    assert "DPSGD sum convention" in after[:3000] and "<b>Cause: choice</b>" in after[:6000]
    tiny = page[page.index('id="huang2019_dpadmm.fig1.error_tiny"'):][:600]
    assert "mark-unexplained" in tiny
    near = page[page.index('id="huang2019_dpadmm.fig1.error_near_centralised"'):][:4000]
    assert "mark-stale" in near and "the test split was the train split" in near
    setup = page.index("Setup checks (our own construction; not counted as claims)")
    assert page.index('id="huang2019_dpadmm.fig1.bisection_hit_target"') > setup


def test_an_item_that_did_not_run_shows_no_leftover_figure_or_parameters(tmp_path):
    """A folder whose metrics say "not run" (or that has no metrics.json) beside an old figure and notebook: the
    report shows neither the figure nor the stale notebook's parameters."""
    root = make_project(tmp_path / "p")
    item_dir = root / "results" / "zhang2018_madmm" / "fig1"
    item_dir.mkdir(parents=True, exist_ok=True)
    (item_dir / "fig1.png").write_bytes(b"\x89PNG\r\n\x1a\n old figure")
    (item_dir / "metrics.json").write_text(json.dumps({"status": "not run", "reason": "dataset unavailable"}))
    report = build_report("results/report", root=root)
    it = next(i for p in report.papers for i in p.items if (p.id, i.item) == ("zhang2018_madmm", "fig1"))
    assert it.state == "not run" and it.figures == []
    (item_dir / "metrics.json").unlink()
    report = build_report("results/report", root=root)
    it = next(i for p in report.papers for i in p.items if (p.id, i.item) == ("zhang2018_madmm", "fig1"))
    assert it.figures == [] and it.params_source != "run"


def test_headline_counts_are_summary_json_s(built):
    """The headline's total is the measured claims of summary.json folded over their cases (setup checks apart),
    not every record of claims.json; each count links to the word's definition, and the per-case count is given."""
    _, report, out = built
    summary = json.loads((out / "summary.json").read_text())
    index = (out / "index.html").read_text()
    folded = summary["folded"]["measured"]
    total = folded["claims"]
    assert total < len(json.loads((out / "claims.json").read_text()))  # the setup check is not a claim
    assert f"<b>{total}</b> measured claims judged" in index
    for verdict, n in folded["verdicts"].items():
        slug = verdict.replace(" ", "-")
        assert f'<a class="hv v-{slug}" href="#term-{slug}"><b>{n}</b> {verdict}</a>' in index
        assert f'id="term-{slug}"' in index
    assert f"judged per case: {sum(summary['claims'].values())} (" in index


def test_compact_table_paper_value_ours_difference_verdict_failures_first(built):
    _, _, out = built
    index = (out / "index.html").read_text()
    table = index[index.index('<section class="paper" id="huang2019_dpadmm">'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr data-verdict="([^"]+)"', table)
    assert rows[:2] == ["not reproduced", "inconclusive"]  # the unexplained failure, then the explained ones
    assert rows.index("reproduced") > max(i for i, v in enumerate(rows) if v in ("partly", "inconclusive",
                                                                                "not reproduced"))
    near = table[table.index("huang2019_dpadmm.fig1.error_near_centralised"):]
    near = near[:near.index("</tr>")]
    assert ">0.15<" in near                                # the paper's value
    assert "0.155" in near and "+0.005 (+3.3%)" in near     # ours, and ours minus the paper's
    tiny = table[table.index("huang2019_dpadmm.fig1.error_tiny"):]
    tiny = tiny[:tiny.index("</tr>")]
    assert "err_final.n100 &lt; centralised_err" in tiny and "left − right = 0.005" in tiny
    assert 'class="why"' in tiny and "fails:" in tiny      # the cause is in the row, not only on the card
    assert "<th data-sort>Paper value</th>" in table


def test_new_verdicts_and_marks_render_without_template_changes(built):
    """A verdict or mark the claims engine adds later shows up with its own class and count."""
    from repro_dpadmm.report import summary
    from repro_dpadmm.report.html import render_site

    _, report, out = built
    v = next(v for v in report.verdicts if v.claim.id == "huang2019_dpadmm.fig3.beats_dpsgd")
    assert v.claim_class == "measured" and v.verdict != "degenerate"
    before = report.class_counts()["measured"].get("degenerate", 0)
    old = v.verdict
    v.verdict = "degenerate"
    try:
        summ = summary(report)
        summ["marks"]["typed_numbers"] = 1
        summ["marks"]["brand_new_mark"] = 2                    # a mark the engine may add later
        records = [x.record() for x in report.verdicts]
        next(r for r in records if r["id"] == v.claim.id)["typed_numbers"] = ["0.31 (= err.dvp)"]
        pages = render_site(report, summ, records, {})
    finally:
        v.verdict = old
    index = pages["index.html"]
    folded = summ["folded"]["measured"]["verdicts"].get("degenerate", 0)
    assert folded >= 1
    assert f'<a class="hv v-degenerate" href="#term-degenerate"><b>{folded}</b> degenerate</a>' in index
    assert f"{before + 1} degenerate" in index               # judged per case
    assert '<b>1</b> with numbers typed into a finding or note that the run holds' in index
    link = index.index(f'#{v.claim.id}"')                 # the claim's row in the compact table carries the mark
    row = index[index.rindex("<tr", 0, link):index.index("</tr>", link)]
    assert "mark-typed-numbers" in row
    assert '<b>2</b> brand new mark' in index
    assert 'data-verdict-filter="degenerate"' in index
    assert 'class="badge v-degenerate"' in pages["huang2019_dpadmm.html"]


def test_index_is_small_and_loads_nothing_from_elsewhere(built):
    _, _, out = built
    index = (out / "index.html").read_text()
    assert len(index.encode()) < 1_000_000
    assert not re.search(r'(src|href)="(https?:)?//', index)


def test_control_bidi_and_invisible_characters_reach_no_page_raw():
    """A bundle's strings (a reason, a parameter, a provenance field) go through every template: an unterminated
    U+202E would reverse the rest of its cell, ESC and BEL mean nothing in a page; each is shown as its escape."""
    from markupsafe import Markup

    from repro_dpadmm.report.html import environment

    template = environment().from_string("<td>{{ text }}</td><td>{{ markup }}</td>")
    page = template.render(text="was: \u202eevil\x1b]0;x\x07 ok\nnext", markup=Markup("<b>\u2066x\u200b</b>"))
    for raw in ("\u202e", "\x1b", "\x07", "\u2066", "\u200b"):
        assert raw not in page
    assert "\\u202eevil" in page and "\\x1b]0;x\\x07" in page and "ok\nnext" in page and "<b>\\u2066x\\u200b</b>" in page


def test_a_results_folder_of_thousands_of_papers_shows_at_most_the_cap(tmp_path):
    """Every page lists every paper: thousands of paper folders in a bundle made the report quadratic (6,000 took
    over two minutes). Papers and items the registry does not list are capped, the rest counted as ignored."""
    from repro_dpadmm.report import MAX_EXTRA_ITEMS, MAX_EXTRA_PAPERS, collect

    root = make_project(tmp_path / "p")
    for i in range(MAX_EXTRA_PAPERS + 5):
        (root / f"results/pp{i:03d}/a").mkdir(parents=True)
        (root / f"results/pp{i:03d}/a/metrics.json").write_text('{"status": "ok"}')
    for j in range(MAX_EXTRA_ITEMS + 3):
        (root / f"results/pp000/i{j:03d}").mkdir()
    report = collect(root=root)
    extra = [p for p in report.papers if p.id.startswith("pp")]
    assert len(extra) == MAX_EXTRA_PAPERS
    assert any("5 more papers the registry does not list" in w for w in report.ignored)
    assert any("more items of pp000 the registry does not list" in w for w in report.ignored)
    assert len(next(p for p in extra if p.id == "pp000").items) <= MAX_EXTRA_ITEMS


def test_items_beyond_the_reports_metrics_budget_are_not_read_and_say_why(tmp_path, monkeypatch):
    """Each item's metrics are capped, and so are all items' together (REPORT_MAX_VALUES): a bundle of a hundred
    items each just inside the caps ran its re-judge out of memory. The items that fit are read; the first that
    does not is "missing", naming the budget."""
    import repro_dpadmm.report as report_mod
    from repro_dpadmm.report import collect
    from repro_dpadmm.safeload import count_values

    root = make_project(tmp_path / "p")
    produced = [it for p in collect(root=root).papers for it in p.items if it.metrics is not None]
    assert len(produced) >= 2
    first = count_values(produced[0].metrics, 10**9)
    monkeypatch.setattr(report_mod, "REPORT_MAX_VALUES", first)
    items = [it for p in collect(root=root).papers for it in p.items]
    read = [it for it in items if it.metrics is not None]
    dropped = [it for it in items if "metric values they may hold together" in it.reason]
    assert [it.item for it in read] == [produced[0].item], [it.item for it in read]
    assert dropped and all(it.state == "missing" for it in dropped)
    assert f"more than the {first:,} metric values" in dropped[0].reason


def test_a_users_file_inside_the_reports_folders_survives_a_new_report(tmp_path, capsys):
    """The report replaces its own entries whole (items/, claims/): a file a user put inside them was deleted
    without a word. The marker lists every file a report wrote; any other is moved into the new report, and said."""
    from repro_dpadmm.report import build_report

    root = make_project(tmp_path / "p")
    build_report("results/report", root=root)
    mine = root / "results/report/items/mine/keep.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("my notes")
    (root / "results/report/claims/mine.txt").write_text("y")
    capsys.readouterr()
    build_report("results/report", root=root)
    assert mine.read_text() == "my notes" and (root / "results/report/claims/mine.txt").read_text() == "y"
    assert "kept 2 files the report did not write: claims/mine.txt, items/mine/keep.txt" in capsys.readouterr().err


def test_a_linked_folder_inside_the_report_is_kept_as_a_link_never_followed(tmp_path):
    """A user's link to a folder inside items/ is moved into the new report as the link it is: its target's files
    are never moved."""
    from repro_dpadmm.report import build_report

    root = make_project(tmp_path / "p")
    build_report("results/report", root=root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mine.txt").write_text("x")
    (root / "results/report/items/linked").symlink_to(outside)
    build_report("results/report", root=root)
    assert (outside / "mine.txt").read_text() == "x"
    assert (root / "results/report/items/linked").is_symlink()
