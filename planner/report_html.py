"""``report.html``: one self-contained page of a plan or a simulation for people to read.

The page needs nothing but itself: the style is inline, the pictures are embedded as ``data:``
URIs, there is no script and no font to fetch, and a Content-Security-Policy forbids the browser
any other source. Every text taken from an input (instance name, description, model names, table
cells) goes through :func:`html.escape`.

:func:`render_page` is the generic builder (title, headline, assumptions, tables, figures,
notes); :func:`solve_page` fills it from a plan, ``planner.study.page`` from a study.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import polars as pl

from planner.pictures import sentences
from planner.report_text import column_label, column_texts, count_text, figure_text

if TYPE_CHECKING:
    from planner.api import PlanResult
    from planner.design import Design
    from planner.family_roles import Presentation
    from planner.schema.instance import Instance
    from planner.sim.sim_tables import SimResult

#: Rows of a table shown on the page; longer tables are cut with a note naming their file.
MAX_ROWS = 30
#: A table of more columns than this (and at most ``TRANSPOSE_MAX_ROWS`` rows) is shown turned.
WIDE_COLUMNS = 11
#: Most rows of a wide table shown turned (a longer one scrolls sideways in its box).
TRANSPOSE_MAX_ROWS = 8
#: Cells longer than this many characters wrap; shorter ones keep to one line.
LONG_TEXT = 60
#: Cells with spaces longer than this wrap in a narrow column (switch models per tier).
WRAP_TEXT = 16
#: Columns a page shows of a table too wide for it; the file beside the page has them all.
PAGE_COLUMNS = {
    "alternatives": (
        "family",
        "option",
        "status",
        "planes",
        "tiers",
        "switch_models",
        "switches",
        "capex_usd",
        "tco_usd",
        "power_kw",
        "delta_tco_usd",
        "sim_verdict",
        "winner",
    ),
}
#: Headings of the tables a solve writes (a table without one is titled by its name); a family's
#: own tables are titled by the family (``Family.table_titles``).
TABLE_TITLES = {
    "summary": "Summary",
    "tiers": "Design, tier by tier (switches per plane and in all planes)",
    "bom": "Bill of materials (all planes)",
    "price_sources": "Where each price comes from",
    "links": "Links by class and medium",
    "workload": "Workload: one training iteration",
    "alternatives": "Alternatives: the best design of every switch option",
    "alternatives_sim": "Each family's best design, simulated",
    "optics_comparison": "Optics: pluggable only, LPO allowed, CPO allowed",
    "bandwidth_loop": "Bandwidth loop",
    "sim_collectives": "Simulation: collectives and patterns",
    "sim_failures": "Simulation: failures",
    "sim_links": "Simulation: link utilisation",
    "sim_link_histogram": "Simulation: links per utilisation bin (summary)",
    "idle_pricing": "Idle GPU time priced: each rung of allowed ratios",
}
#: Tables shown summarised on the page (the file beside it holds them whole).
SUMMARISED = {"sim_link_histogram": "sim_link_histogram.csv"}
#: A link at or above this utilisation counts as busy in the histogram's summary.
BUSY_UTILISATION = 0.9
#: Figure captions by picture name (``planner.pictures.PICTURES``).
FIGURE_CAPTIONS = {
    "topology": "Drawn from the design (design.json); each bundle's lengths are links.csv's range.",
    "costs": "From bom.csv (all planes) and, for scale-up switches, summary.csv.",
    "alternatives": "From alternatives.csv: each priced option's capex plus lifetime energy.",
    "optics": "From optics_comparison.csv.",
    "cable_lengths": "From design.json: each link group's lengths from the floor plan "
    "(length_histogram), per link class and stacked by medium, with the medium's reach.",
    "utilisation": "From sim_link_histogram.csv: every directed link's load over its capacity at "
    "the start of each traffic's first phase, binned by 5 %, by tier and direction.",
}

CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  "Noto Sans", "DejaVu Sans", sans-serif; color: #1d1f21; background: #fff; margin: 0;
  line-height: 1.45; font-size: 15px; }
main { max-width: 1240px; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; padding-bottom: .25rem; border-bottom: 1px solid #d8dce3; }
h3 { font-size: 1rem; margin: 1.4rem 0 .4rem; }
p.intro { color: #444; margin: .2rem 0 1rem; overflow-wrap: anywhere; }
ul.headline { list-style: none; padding: .8rem 1rem; margin: 0; background: #f4f6f9;
  border-left: 4px solid #3465a4; border-radius: 4px; }
ul.headline li { margin: .15rem 0; overflow-wrap: anywhere; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(11rem, 1fr)); gap: .6rem;
  margin: .8rem 0; }
.card { border: 1px solid #d8dce3; border-radius: 6px; padding: .55rem .75rem; }
.card .v { font-size: 1.2rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .k { color: #555; font-size: .8rem; }
.scroll { overflow-x: auto; width: fit-content; max-width: 100%; margin: .3rem 0 .4rem; border: 1px solid #e3e6eb;
  border-radius: 4px;
  background: linear-gradient(to right, #fff 30%, rgba(255,255,255,0)) left / 2rem 100% no-repeat local,
    linear-gradient(to left, #fff 30%, rgba(255,255,255,0)) right / 2rem 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.18), rgba(0,0,0,0)) left / .8rem 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.18), rgba(0,0,0,0)) right / .8rem 100% no-repeat scroll; }
.scroll::-webkit-scrollbar { height: 10px; }
.scroll::-webkit-scrollbar-thumb { background: #c3c9d3; border-radius: 5px; }
.scroll::-webkit-scrollbar-track { background: #f4f6f9; }
.scroll table { margin: 0; }
table { border-collapse: collapse; font-size: .82rem; font-variant-numeric: tabular-nums; }
th, td { padding: .28rem .55rem; border-bottom: 1px solid #e3e6eb; text-align: left;
  vertical-align: top; }
th { background: #eef1f5; font-weight: 600; min-width: 2.5rem; max-width: 9rem;
  overflow-wrap: normal; }
th[scope="row"] { max-width: 16rem; }
tbody tr:nth-child(even) { background: rgba(0, 0, 0, .025); }
p.lines { margin: .2rem 0 1rem; }
td.num { text-align: right; white-space: nowrap; }
td.text { white-space: nowrap; }
td.wrap { min-width: 8rem; max-width: 13rem; }
td.long { min-width: 16rem; max-width: 30rem; overflow-wrap: break-word; }
p.note { color: #666; font-size: .8rem; margin: .2rem 0 1rem; }
figure { margin: 1rem 0 1.6rem; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eceff3; }
figcaption { color: #555; font-size: .85rem; margin-top: .3rem; }
ul.notes li { margin: .2rem 0; }
footer { color: #888; font-size: .8rem; margin-top: 2.5rem; }
"""

#: The page allows itself nothing but its own style and embedded images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# ---- cells, tables, figures ----------------------------------------------------------------
def cell(value: Any, column: str = "") -> tuple[str, bool]:
    """A table cell's text (``planner.report_text.figure_text``, by its column) and whether a number."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return figure_text(column, value), number


def table_html(
    df: pl.DataFrame, *, max_rows: int = MAX_ROWS, source: str = "", labels: bool = True
) -> str:
    """A table as HTML in its own scrolling box, cut to ``max_rows`` rows.

    The note under a cut table names ``source`` for the rest. Headings read as words with
    units (``planner.report_text.column_label``).
    """
    if not df.height:
        return '<p class="note">no rows</p>'
    head = "".join(
        f'<th scope="col">{escape(column_label(str(c)) if labels else str(c))}</th>'
        for c in df.columns
    )

    shown = df.head(max_rows)
    texts = {c: column_texts(c, shown[c].to_list()) for c in shown.columns}
    body = []
    for i, row in enumerate(shown.iter_rows()):
        cells = []
        for column, value in zip(df.columns, row, strict=True):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            text = texts[column][i]
            kind = (
                "num"
                if number
                else "long"
                if len(text) > LONG_TEXT
                else "wrap"
                if len(text) > WRAP_TEXT and " " in text
                else "text"
            )
            cells.append(f'<td class="{kind}">{escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    out = (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    if df.height > max_rows:
        where = f"; full table in {escape(source)}" if source else ""
        out += (
            f'<p class="note">first {max_rows:,} of {escape(count_text(df.height, "row"))}'
            f"{where}</p>"
        )
    return out


def page_view(name: str, df: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """The columns of a table a page shows, and the headings of those it leaves out.

    Columns without a value (null or empty) are left out, and of a table in ``PAGE_COLUMNS``
    all but those.
    """
    keep = [
        c
        for c in df.columns
        if (name not in PAGE_COLUMNS or c in PAGE_COLUMNS[name])
        and (not df.height or any(v not in (None, "") for v in df[c].to_list()))
    ]

    return df.select(keep), [column_label(c) for c in df.columns if c not in keep]


def is_wide(df: pl.DataFrame) -> bool:
    """Whether a table is too wide for the page and short enough to show turned (``transposed``)."""
    return df.width > WIDE_COLUMNS and 1 <= df.height <= TRANSPOSE_MAX_ROWS


def transposed(df: pl.DataFrame) -> pl.DataFrame:
    """A wide, short table turned: one row per column (its heading), one column per row.

    Each value is formatted by its own column (``planner.report_text.figure_text``) before turning,
    and each column is headed by its row's first value (a name: the option, the collective).
    """
    first = df.columns[0]
    heads = [figure_text(first, v) or f"row {i + 1}" for i, v in enumerate(df[first].to_list())]
    # Name each row by the text columns that tell it apart (pattern, routing, scenario).
    for column in df.columns[1:]:
        if len(set(heads)) == len(heads):
            break
        if df.schema[column] != pl.Utf8:
            continue
        longer = [f"{h} · {figure_text(column, v)}" for h, v in zip(heads, df[column], strict=True)]
        if len(set(longer)) > len(set(heads)):
            heads = longer
    heads = [h if heads.count(h) == 1 else f"{h} ({i + 1})" for i, h in enumerate(heads)]
    data: dict[str, list[str]] = {column_label(first): [column_label(c) for c in df.columns[1:]]}
    texts = {c: column_texts(c, df[c].to_list()) for c in df.columns[1:]}
    for i, head in enumerate(heads):
        data[head] = [texts[c][i] for c in df.columns[1:]]
    return pl.DataFrame(data)


def data_uri(data: bytes) -> str:
    """``data:`` URI of a PNG or SVG picture (told apart by their bytes)."""
    mime = "image/png" if data.startswith(b"\x89PNG\r\n\x1a\n") else "image/svg+xml"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def figure_html(name: str, data: bytes, caption: str = "") -> str:
    """One embedded picture with its caption."""
    text = escape(caption or name)
    return (
        f'<figure id="fig-{escape(name)}"><img src="{data_uri(data)}" alt="{text}">'
        f"<figcaption>{text}</figcaption></figure>"
    )


# ---- the generic page ----------------------------------------------------------------------
def render_page(
    title: str,
    headline_lines: Sequence[str],
    assumptions: Sequence[tuple[str, str]],
    tables: Mapping[str, pl.DataFrame],
    figures: Mapping[str, bytes],
    *,
    intro: str = "",
    cards: Sequence[tuple[str, str]] = (),
    notes: Sequence[str] = (),
    sections: Sequence[tuple[str, Sequence[str]]] = (),
    titles: Mapping[str, str] | None = None,
    captions: Mapping[str, str] | None = None,
    sources: Mapping[str, str] | None = None,
    max_rows: int = MAX_ROWS,
    whole: Sequence[str] = (),
    figure_lines: Mapping[str, Sequence[str]] | None = None,
    turn_wide: bool = False,
    summarised: Sequence[str] = (),
) -> str:
    """One self-contained HTML page; every text given is escaped here.

    Parameters
    ----------
    title
        The page's title and heading.
    headline_lines
        The result in a few lines (``planner.report_markdown.headline``).
    assumptions
        (what, value) pairs: prices, lifetime, constraints and how close the result is to them.
    tables
        Tables by name, in the order shown; each cut to ``max_rows`` rows.
    figures
        Pictures (PNG or SVG bytes) by name, in the order shown, embedded as ``data:`` URIs.
    intro
        A paragraph under the title (the instance's description).
    cards
        (what, value) pairs shown as large figures under the headline (per-GPU cost and power).
    notes
        Lines shown at the end.
    sections
        (heading, lines) shown right under the result (why no design was found, say).
    titles, captions
        Headings of tables and captions of figures by name (default: the name).
    sources
        File holding each table in full, named in the note of a cut table (default ``<name>.csv``).
    max_rows
        Rows shown of each table.
    whole
        Tables shown whole, never cut.
    figure_lines
        Sentences by picture name, shown under the picture, or in its place when there is none
        (what a chart of one bar would have said).
    turn_wide
        Show a table too wide for the page but short (``is_wide``) turned, one column per row.
    summarised
        Tables given as a summary of their file (``sources``), said in a note under them.
    """
    titles = titles or {}
    captions = captions or {}
    sources = sources or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
    ]
    if intro:
        parts.append(f'<p class="intro">{escape(intro)}</p>')
    if headline_lines:
        items = "".join(f"<li>{escape(line)}</li>" for line in headline_lines)
        parts.append(f'<h2>Result</h2><ul class="headline">{items}</ul>')
    if cards:
        parts.append(
            '<div class="cards">'
            + "".join(
                f'<div class="card"><div class="v">{escape(v)}</div>'
                f'<div class="k">{escape(k)}</div></div>'
                for k, v in cards
            )
            + "</div>"
        )
    for heading, lines in sections:
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        parts.append(f'<h2>{escape(heading)}</h2><ul class="notes">{items}</ul>')
    if assumptions:
        rows = "".join(
            f'<tr><th scope="row">{escape(k)}</th><td class="long">{escape(v)}</td></tr>'
            for k, v in assumptions
        )
        parts.append(
            f'<h2>Assumptions used</h2><div class="scroll"><table><tbody>{rows}</tbody></table></div>'
        )
    figure_lines = figure_lines or {}
    if figures or any(figure_lines.values()):
        parts.append("<h2>Pictures</h2>")
        for name in dict.fromkeys([*figures, *figure_lines]):
            if name in figures:
                parts.append(figure_html(name, figures[name], captions.get(name, "")))
            lines = figure_lines.get(name, ())
            if lines:
                parts.append(
                    f'<ul class="notes" id="text-{escape(name)}">'
                    + "".join(f"<li>{escape(line)}</li>" for line in lines)
                    + "</ul>"
                )
    if tables:
        parts.append("<h2>Tables</h2>")
        for name, df in tables.items():
            title = titles.get(name) or column_label(name).capitalize()
            parts.append(f'<h3 id="table-{escape(name)}">{escape(title)}</h3>')
            source = sources.get(name, f"{name}.csv")
            if turn_wide:
                df, left_out = page_view(name, df)
                if left_out:
                    parts.append(
                        f'<p class="note">not shown here: {escape(", ".join(left_out))} '
                        f"(in {escape(source)})</p>"
                    )
            if turn_wide and is_wide(df):
                parts.append(
                    table_html(transposed(df), max_rows=df.width, source=source, labels=False)
                )
                parts.append(
                    f'<p class="note">{escape(count_text(df.width, "column"))} turned into rows '
                    f"to fit the page: one column per row of {escape(source)}</p>"
                )
                continue
            limit = df.height if name in whole else max_rows
            parts.append(table_html(df, max_rows=limit, source=source))
            if name in summarised:
                parts.append(f'<p class="note">a summary: every row is in {escape(source)}</p>')
    if notes:
        parts.append(
            '<h2>Notes</h2><ul class="notes">'
            + "".join(f"<li>{escape(n)}</li>" for n in notes)
            + "</ul>"
        )
    parts.append("<footer>Written by fabric-planner.</footer></main></body></html>")
    return "\n".join(parts) + "\n"


# ---- a solve's page ------------------------------------------------------------------------
def _cap(label: str, cap: float | None, value: float | None, unit_fmt: str) -> tuple[str, str]:
    """(constraint, 'at most X; design Y (Z% of the cap)') for a numeric cap."""
    if cap is None:
        return label, "no cap"
    text = f"at most {unit_fmt.format(cap)}"
    if value is not None:
        text += f"; design {unit_fmt.format(value)} ({value / cap:.0%} of the cap)"
    return label, text


def assumptions(inst: Instance, summary: pl.DataFrame) -> list[tuple[str, str]]:
    """The prices, lifetime and constraints a plan was made under, each cap beside the result."""
    o, c = inst.objective, inst.constraints
    s = summary.row(0, named=True)
    found = s["tco_usd"] is not None
    out = [
        ("energy price", f"${o.energy_usd_per_kwh:,.3f} per kWh"),
        ("PUE", f"{o.pue:g}"),
        ("lifetime", f"{o.lifetime_years:g} years"),
        ("lifetime energy cost", f"${o.energy_usd_per_w:,.2f} per W of network power"),
        ("objective", f"{o.capex_weight:g} × capex + {o.energy_weight:g} × lifetime energy"),
    ]
    ratios = c.max_oversubscription
    allowed = (
        ", ".join(f"{r:g}:1" for r in ratios) + " (leaf first)"
        if isinstance(ratios, list)
        else f"{ratios:g}:1 at every tier"
    )
    design_ratio = f"; design {s['oversubscription']:.2f}:1" if found else ""
    out.append(("max oversubscription", f"{allowed}{design_ratio}"))
    hops = s["max_switch_hops"] if found else None
    out.append(_cap("max switch hops", c.max_switch_hops, hops, "{:,.0f}"))
    latency = s["max_latency_ns"] if found else None
    out.append(_cap("max latency", c.max_latency_ns, latency, "{:,.0f} ns"))
    power = s["power_kw"] if found else None
    out.append(_cap("max network power", c.max_power_kw, power, "{:,.1f} kW"))
    capex = s["capex_usd"] if found else None
    out.append(_cap("max network capex", c.max_capex_usd, capex, "${:,.0f}"))
    if c.survive is None or c.survive.switch_failures == 0:
        out.append(("failure tolerance", "not required"))
    else:
        after = s["sim_fraction_after_failure"]
        seen = f"; simulated after a failure: {after:.2f} of healthy" if after is not None else ""
        out.append(
            (
                "failure tolerance",
                f"one switch of {', '.join(c.survive.tiers)} may fail, keeping at least "
                f"{c.survive.min_bandwidth_fraction:.0%} of the uplink bandwidth{seen}",
            )
        )
    return out


def per_gpu(summary: pl.DataFrame) -> list[tuple[str, str]]:
    """Cost and power per GPU: scale-out network, whole interconnect, TCO."""
    s = summary.row(0, named=True)
    if s["tco_usd"] is None or not s["gpus"]:
        return []
    n = s["gpus"]
    return [
        ("network capex per GPU", f"${s['capex_usd'] / n:,.0f}"),
        ("network TCO per GPU", f"${s['tco_usd'] / n:,.0f}"),
        ("network power per GPU", f"{s['power_kw'] * 1000 / n:,.1f} W"),
        ("whole interconnect capex per GPU", f"${s['interconnect_capex_usd'] / n:,.0f}"),
        ("whole interconnect power per GPU", f"{s['interconnect_power_kw'] * 1000 / n:,.1f} W"),
    ]


#: The order a solve's tables are shown in: these, with the family's design tables after the
#: links (``Family.design_tables``); others follow in their own order.
DESIGN_ORDER = ("summary", "tiers", "bom", "links")
SOLVE_ORDER = (
    "workload",
    "alternatives",
    "alternatives_sim",
    "optics_comparison",
    "bandwidth_loop",
    "sim_collectives",
    "sim_failures",
    "sim_links",
)


def _transposed(summary: pl.DataFrame) -> pl.DataFrame:
    """The one-row summary as (field, value) rows, empty fields left out.

    Each field reads as words with its unit, each value as its kind of figure (the same
    ``column_label`` and ``figure_text`` as every other table).
    """
    row = summary.row(0, named=True)
    return pl.DataFrame(
        {
            "field": [column_label(k) for k, v in row.items() if v is not None],
            "value": [figure_text(k, v) for k, v in row.items() if v is not None],
        }
    )


def histogram_summary(histogram: pl.DataFrame) -> pl.DataFrame:
    """``sim_link_histogram`` in one row per pattern, routing, tier and direction.

    Its links, how many are idle, how many run at or above ``BUSY_UTILISATION``, and the
    highest bin that has links: the page's view of a table of hundreds of bins (the file has them).
    """
    keys = ["pattern", "routing", "tier", "direction"]
    busy = f"links_at_{round(100 * BUSY_UTILISATION)}_percent_or_more"
    return (
        histogram.group_by(keys, maintain_order=True)
        .agg(
            links=pl.col("links").sum(),
            idle_links=pl.col("links").filter(pl.col("bin_high") == 0).sum(),
            busy=pl.col("links").filter(pl.col("bin_low") >= BUSY_UTILISATION).sum(),
            low=pl.col("bin_low").filter(pl.col("links") > 0).max(),
            high=pl.col("bin_high").filter(pl.col("links") > 0).max(),
        )
        .rename({"busy": busy})
        .with_columns(
            highest_bin_with_links=pl.when(pl.col("high") == 0)
            .then(pl.lit("idle"))
            .otherwise(
                pl.format(
                    "{}-{} %",
                    (100 * pl.col("low")).round(0).cast(pl.Int64),
                    (100 * pl.col("high")).round(0).cast(pl.Int64),
                )
            )
        )
        .drop("low", "high")
    )


def _titles(family: Presentation | None) -> dict[str, str]:
    """Every table's heading: the shared ones and the family's own."""
    return {**TABLE_TITLES, **({} if family is None else family.table_titles())}


def solve_page(
    plan_result: PlanResult,
    tables: Mapping[str, pl.DataFrame],
    figures: Mapping[str, bytes],
    *,
    lines: Sequence[str],
    workload: Sequence[tuple[str, str]],
    tiers: pl.DataFrame | None,
) -> str:
    """The page of a solve: headline, assumptions, per-GPU figures, pictures, tables.

    ``tables`` are the report set's (``planner.report.plan_tables``); ``figures`` the pictures
    by name (``planner.pictures``; SVG preferred). ``lines``, ``workload`` and ``tiers`` are
    report.md's headline, workload assumptions and tiers table (``planner.report.solve_html``
    gives them), so both reports say the same.
    """
    inst = plan_result.instance
    summary = tables["summary"]
    shown: dict[str, pl.DataFrame] = {"summary": _transposed(summary)}
    if tiers is not None:
        shown["tiers"] = tiers
    family = plan_result.family
    order = (*DESIGN_ORDER, *(() if family is None else family.design_tables()), *SOLVE_ORDER)
    ordered = [n for n in order if n in tables] + [n for n in tables if n not in order]
    for name in ordered:
        if name not in shown:
            shown[name] = histogram_summary(tables[name]) if name in SUMMARISED else tables[name]
        if name == "bom" and "source" in tables[name].columns and tables[name].height:
            # Long price sources would make every BOM row tall: one row per model instead.
            shown["bom"] = tables[name].drop("source")
            shown["price_sources"] = (
                tables[name].select("model", "source").unique("model", maintain_order=True)
            )
    sections: list[tuple[str, Sequence[str]]] = []
    if plan_result.design is None:
        from models.status import Status

        heading = (
            "No design meets the constraints"
            if plan_result.status is Status.INFEASIBLE
            else "No design found"
        )
        sections.append((heading, list(plan_result.explanation)))
    notes: list[str] = []
    if plan_result.sim is not None:
        notes += list(plan_result.sim.reasons) + list(plan_result.sim.notes)
    notes.append(
        "Every table is written in full beside this page as CSV (rounded) and Parquet (exact)."
    )
    return render_page(
        f"fabric-planner report: {inst.name}",
        lines,
        [*assumptions(inst, summary), *workload],
        shown,
        figures,
        intro=inst.description,
        cards=per_gpu(summary),
        notes=notes,
        sections=sections,
        titles=_titles(family),
        captions=FIGURE_CAPTIONS,
        sources={"tiers": "design.json", "price_sources": "bom.csv", **SUMMARISED},
        whole=("summary", "tiers", *SUMMARISED),
        figure_lines=sentences(dict(tables), plan_result.design),
        turn_wide=True,
        summarised=tuple(SUMMARISED),
    )


def simulation_page(
    design: Design,
    sim: SimResult,
    tables: Mapping[str, pl.DataFrame],
    figures: Mapping[str, bytes],
    *,
    lines: Sequence[str],
    tiers: pl.DataFrame,
    family: Presentation | None = None,
) -> str:
    """The page of ``simulate``: the saved design's headline, its verdict, pictures and tables.

    ``lines`` and ``tiers`` are report.md's headline and tiers table (``planner.report``);
    ``family`` is the design's, whose tables it titles.
    """
    summary = tables["summary"]
    shown: dict[str, pl.DataFrame] = {"summary": _transposed(summary), "tiers": tiers}
    for name, df in tables.items():
        if name not in shown:
            shown[name] = df.drop("source") if name == "bom" and "source" in df.columns else df
        if name in SUMMARISED:
            shown[name] = histogram_summary(df)
    return render_page(
        f"fabric-planner simulation: {design.instance}",
        lines,
        (),
        shown,
        figures,
        cards=per_gpu(summary),
        notes=[
            *sim.reasons,
            *sim.notes,
            "Every table is written in full beside this page as CSV (rounded) and Parquet (exact).",
        ],
        titles=_titles(family),
        captions=FIGURE_CAPTIONS,
        sources={"tiers": "design.json", **SUMMARISED},
        whole=("summary", "tiers", *SUMMARISED),
        figure_lines=sentences(dict(tables), design),
        turn_wide=True,
        summarised=tuple(SUMMARISED),
    )
