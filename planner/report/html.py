"""``report.html``: one self-contained page of a plan or a simulation for people to read.

The page needs nothing but itself: the style is inline, the pictures are embedded as ``data:``
URIs, there is no script and no font to fetch, and a Content-Security-Policy forbids the browser
any other source. The page is the jinja2 template ``planner/templates/report.html.j2`` (with its
style, ``report.css``), rendered with autoescaping on: every text taken from an input (instance
name, description, model names, table cells) is escaped by the template.

Every table fits the page: a table too wide for it is turned (a short one: one column per row)
or split into parts of columns, each part repeating the columns that name its rows, so every
column is readable without a sideways scroll. A table without rows is not a section; one line
names them. Widths are estimated from the cells' texts (:func:`column_px`), with the page's
style in mind; the browser tests measure the result at 1280 px.

:func:`render_page` is the generic builder (title, headline, assumptions, tables, figures,
notes); :func:`solve_page` fills it from a plan, ``planner.study.page`` from a study.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from planner.deadline import cut_notes
from planner.family_roles import Tables
from planner.report.pictures import sentences
from planner.report.text import column_label, column_texts, count_text, figure_text

if TYPE_CHECKING:
    from jinja2 import Environment

    from planner.design import Design
    from planner.report.plan_result import PlanResult
    from planner.schema.instance import Instance
    from planner.sim.sim_tables import SimResult

#: The page's template (with its style, ``report.css``) in ``planner/templates``.
TEMPLATE = "report.html.j2"
#: Rows of a table shown on the page; longer tables are cut with a note naming their file.
MAX_ROWS = 30
#: Most rows of a table too wide for the page shown turned (one column per row); a longer one
#: is split into parts of columns.
TRANSPOSE_MAX_ROWS = 8
#: Cells longer than this many characters wrap; shorter ones keep to one line.
LONG_TEXT = 60
#: Cells with spaces longer than this wrap in a narrow column (switch models per tier).
WRAP_TEXT = 16
#: Most leading text columns that name a row, repeated in every part of a split table.
MAX_KEY_COLUMNS = 3
#: Width of the page's content at 1280 px (``main`` in report.css: 1240 px less its padding),
#: and the share of it a table is laid out to fill (the rest absorbs wider letters).
PAGE_PX = 1200.0
FILL_SHARE = 0.95
#: Widths, in CSS pixels, of the page's table text (report.css: 0.82 rem of 16 px, measured in
#: Chromium with its sans-serif font): a character of a cell and of a bold heading on average,
#: and a cell's horizontal padding and border.
CHAR_PX = 7.4
HEAD_CHAR_PX = 7.5
CELL_PAD_PX = 18.6
#: Width a heading wraps to when the page needs it (9 rem), widest and narrowest a wrapping
#: cell (13 and 8 rem) and a long one (30 and 16 rem) grow, in CSS pixels (report.css).
HEAD_MAX_PX = 144.0
WRAP_MAX_PX, WRAP_MIN_PX = 208.0, 128.0
LONG_MAX_PX, LONG_MIN_PX = 480.0, 256.0
#: Widest a row heading (``th[scope=row]``: 16 rem) grows, in CSS pixels.
ROW_HEAD_MAX_PX = 256.0
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
    "sim_together": "Simulation: patterns run together",
    "idle_pricing": "Idle GPU time priced: each rung of allowed ratios",
}
#: Tables shown summarised on the page (the file beside it holds them whole).
SUMMARISED = {"sim_link_histogram": "sim_link_histogram.csv"}
#: A link at or above this utilisation counts as busy in the histogram's summary.
BUSY_UTILISATION = 0.9
#: Figure captions by picture name (``planner.report.pictures.PICTURES``).
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


#: The page allows itself nothing but its own style and embedded images.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


@functools.cache
def environment() -> Environment:
    """The templates' environment: the package's templates, autoescaping on, strict names."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    return Environment(
        loader=PackageLoader("planner", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# ---- tables laid out to fit the page -------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One cell as shown: its text and its kind (``num``, ``text``, ``wrap``, ``long``, ``row``).

    ``row`` is a row's heading (the label column of a turned table or of the assumptions).
    """

    text: str
    kind: str


@dataclass(frozen=True)
class Block:
    """One table on the page: headings (none for a list of pairs) and rows of cells.

    The first ``keys`` columns name the rows; a split table repeats them in every block.
    """

    heads: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    keys: int = 0


@dataclass(frozen=True)
class TableView:
    """A table's section: its name, title, notes before and after, and its blocks."""

    name: str
    title: str
    blocks: tuple[Block, ...]
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


def cell_kind(text: str, number: bool) -> str:
    """How a cell is set: a number (right, one line), short text, wrapping text, long text."""
    if number:
        return "num"
    if len(text) > LONG_TEXT:
        return "long"
    if len(text) > WRAP_TEXT and " " in text:
        return "wrap"
    return "text"


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def cell_px(c: Cell) -> float:
    """A cell's estimated width on the page, in CSS pixels (its padding included)."""
    text = len(c.text) * CHAR_PX
    word = _longest_word(c.text) * CHAR_PX
    if c.kind == "long":
        return CELL_PAD_PX + max(min(text, LONG_MAX_PX), LONG_MIN_PX, word)
    if c.kind == "wrap":
        return CELL_PAD_PX + max(min(text, WRAP_MAX_PX), WRAP_MIN_PX, word)
    if c.kind == "row":
        return CELL_PAD_PX + max(min(len(c.text) * HEAD_CHAR_PX, ROW_HEAD_MAX_PX), word)
    return CELL_PAD_PX + text


def head_px(head: str) -> float:
    """A heading's estimated width (it wraps between words up to ``HEAD_MAX_PX``)."""
    longest = _longest_word(head) * HEAD_CHAR_PX
    return CELL_PAD_PX + max(min(len(head) * HEAD_CHAR_PX, HEAD_MAX_PX), longest)


def column_px(head: str, cells: Sequence[Cell]) -> float:
    """A column's estimated width: its heading's or its widest cell's."""
    return max([head_px(head) if head else 0.0, *(cell_px(c) for c in cells)])


def block_px(block: Block) -> float:
    """A block's estimated width: its columns' widths added."""
    heads = block.heads or ("",) * len(block.rows[0] if block.rows else ())
    return sum(column_px(h, [r[k] for r in block.rows]) for k, h in enumerate(heads))


def frame_block(df: pl.DataFrame, *, labels: bool = True, row_heads: bool = False) -> Block:
    """A table's rows as cells, each column's figures written alike (``column_texts``).

    ``labels``: headings read as words with units (``column_label``); else as they are.
    ``row_heads``: the first column heads its row (a turned table's labels).
    """
    texts = {c: column_texts(c, df[c].to_list()) for c in df.columns}
    rows = []
    for i, row in enumerate(df.iter_rows()):
        cells = []
        for k, (column, value) in enumerate(zip(df.columns, row, strict=True)):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            text = texts[column][i]
            cells.append(Cell(text, "row" if row_heads and k == 0 else cell_kind(text, number)))
        rows.append(tuple(cells))
    heads = tuple(column_label(str(c)) if labels else str(c) for c in df.columns)
    return Block(heads, tuple(rows), 1 if row_heads else 0)


def key_columns(df: pl.DataFrame) -> int:
    """How many leading columns name a table's rows (repeated in every part of a split table).

    The first column, then the text columns after it while the rows are not yet told apart
    (pattern, routing, scenario), at most ``MAX_KEY_COLUMNS``.
    """
    keys = 1
    while (
        keys < min(MAX_KEY_COLUMNS, df.width - 1)
        and df.select(df.columns[:keys]).is_duplicated().any()
        and df.schema[df.columns[keys]] in (pl.Utf8, pl.Boolean, pl.Categorical)
    ):
        keys += 1
    return keys


def split(block: Block, budget_px: float = PAGE_PX * FILL_SHARE) -> list[Block]:
    """A block too wide for the page as blocks of its columns that fit, each with its keys.

    Columns keep their order; a column too wide to share a block has one of its own.
    """
    if block_px(block) <= budget_px or len(block.heads) <= block.keys + 1:
        return [block]
    keys = max(block.keys, 1)
    widths = [column_px(h, [r[k] for r in block.rows]) for k, h in enumerate(block.heads)]
    parts: list[list[int]] = [[]]
    used = sum(widths[:keys])
    for k in range(keys, len(block.heads)):
        if parts[-1] and used + widths[k] > budget_px:
            parts.append([])
            used = sum(widths[:keys])
        parts[-1].append(k)
        used += widths[k]
    out = []
    for part in parts:
        columns = [*range(keys), *part]
        out.append(
            Block(
                tuple(block.heads[k] for k in columns),
                tuple(tuple(r[k] for k in columns) for r in block.rows),
                keys,
            )
        )
    return out


def transposed(df: pl.DataFrame) -> pl.DataFrame:
    """A wide, short table turned: one row per column (its heading), one column per row.

    Each value is formatted by its own column (``planner.report.text.figure_text``) before turning,
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


def _turned_block(df: pl.DataFrame) -> Block:
    """A turned table's block: its labels head the rows, its cells keep their own kinds."""
    turned = transposed(df)
    numbers = [df.schema[c].is_numeric() and df.schema[c] != pl.Boolean for c in df.columns[1:]]
    rows = [
        (Cell(str(row[0]), "row"), *(Cell(str(v), cell_kind(str(v), numbers[i])) for v in row[1:]))
        for i, row in enumerate(turned.iter_rows())
    ]
    return Block(tuple(turned.columns), tuple(rows), 1)


def table_view(
    name: str,
    df: pl.DataFrame,
    *,
    title: str,
    source: str,
    max_rows: int = MAX_ROWS,
    turn_wide: bool = False,
    summarised: bool = False,
) -> TableView | None:
    """A table's section, laid out to fit the page; None for a table without rows.

    Columns without a value are left out (a note names them). A table too wide for the page
    is turned when it has at most ``TRANSPOSE_MAX_ROWS`` rows and ``turn_wide`` is set, and
    split into parts of columns otherwise (or when turned is still too wide): every column is
    on the page. A table longer than ``max_rows`` is cut with a note naming ``source``.
    """
    if not df.height:
        return None
    before: list[str] = []
    after: list[str] = []
    valued = [c for c in df.columns if any(v not in (None, "") for v in df[c].to_list())]
    if len(valued) < df.width:
        blank = [column_label(c) for c in df.columns if c not in valued]
        before.append(f"columns without a value here: {', '.join(blank)}")
        df = df.select(valued)
    shown = df.head(max_rows)
    block = frame_block(shown)
    budget = PAGE_PX * FILL_SHARE
    if turn_wide and block_px(block) > budget and shown.height <= TRANSPOSE_MAX_ROWS:
        block = _turned_block(shown)
        after.append(
            f"{count_text(shown.width, 'column')} turned into rows to fit the page: "
            f"one column per row of {source}"
        )
    else:
        block = replace_keys(block, key_columns(shown))
    blocks = split(block, budget)
    if len(blocks) > 1:
        keys = ", ".join(blocks[0].heads[: blocks[0].keys])
        after.append(
            f"too wide for one table: shown in {len(blocks)} parts of its columns, "
            f"each beginning with {keys}"
        )
    if df.height > max_rows:
        after.append(
            f"first {max_rows:,} of {count_text(df.height, 'row')}; full table in {source}"
        )
    if summarised:
        after.append(f"a summary: every row is in {source}")
    return TableView(name, title, tuple(blocks), tuple(before), tuple(after))


def replace_keys(block: Block, keys: int) -> Block:
    """The block with its first ``keys`` columns naming its rows."""
    return Block(block.heads, block.rows, keys)


def pairs_block(pairs: Sequence[tuple[str, str]]) -> Block:
    """(what, value) pairs as a table of row headings and long cells (the assumptions)."""
    return Block((), tuple((Cell(k, "row"), Cell(v, "long")) for k, v in pairs), 1)


def data_uri(data: bytes) -> str:
    """``data:`` URI of a PNG or SVG picture (told apart by their bytes)."""
    mime = "image/png" if data.startswith(b"\x89PNG\r\n\x1a\n") else "image/svg+xml"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


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
    empty_reason: str = "",
) -> str:
    """One self-contained HTML page (``TEMPLATE``); every text given is escaped by it.

    Parameters
    ----------
    title
        The page's title and heading.
    headline_lines
        The result in a few lines (``planner.report.markdown.headline``).
    assumptions
        (what, value) pairs: prices, lifetime, constraints and how close the result is to them.
    tables
        Tables by name, in the order shown; each cut to ``max_rows`` rows and laid out to fit
        the page (:func:`table_view`). A table without rows is not shown: one line names them.
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
        Show a table too wide for the page but short turned, one column per row.
    summarised
        Tables given as a summary of their file (``sources``), said in a note under them.
    empty_reason
        Why tables have no rows (a simulation cut short), said after their names.
    """
    titles = titles or {}
    captions = captions or {}
    sources = sources or {}
    figure_lines = figure_lines or {}
    views: list[TableView] = []
    empty: list[str] = []
    for name, df in tables.items():
        table_title = titles.get(name) or column_label(name).capitalize()
        view = table_view(
            name,
            df,
            title=table_title,
            source=sources.get(name, f"{name}.csv"),
            max_rows=df.height if name in whole else max_rows,
            turn_wide=turn_wide,
            summarised=name in summarised,
        )
        if view is None:
            empty.append(table_title)
        else:
            views.append(view)
    empty_line = (
        f"{count_text(len(empty), 'table')} without rows, not shown: {'; '.join(empty)}"
        + (f" ({empty_reason})" if empty_reason else "")
        if empty
        else ""
    )
    shown_figures = [
        {
            "name": name,
            "uri": data_uri(figures[name]) if name in figures else "",
            "caption": captions.get(name, "") or name,
            "lines": list(figure_lines.get(name, ())),
        }
        for name in dict.fromkeys([*figures, *figure_lines])
        if name in figures or figure_lines.get(name)
    ]
    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            csp=CSP,
            title=title,
            intro=intro,
            headline=list(headline_lines),
            cards=list(cards),
            sections=[(heading, list(lines)) for heading, lines in sections],
            assumptions=pairs_block(assumptions) if assumptions else None,
            figures=shown_figures,
            tables=views,
            empty=empty_line,
            notes=list(notes),
        )
    )


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


def _titles(family: Tables | None) -> dict[str, str]:
    """Every table's heading: the shared ones and the family's own."""
    return {**TABLE_TITLES, **({} if family is None else family.table_titles())}


def result_lines(plan_result: PlanResult) -> list[str]:
    """Headline lines the CLI prints after the summary's: interruptions a day and goodput.

    ``planner.reliability.text.failure_lines``, when the instance has a ``[reliability]``
    section, so the page's headline says what ``solve`` prints.
    """
    if plan_result.reliability is None:
        return []
    from planner.reliability.text import failure_lines

    return failure_lines(plan_result.reliability)


def empty_reason(sim: SimResult | None) -> str:
    """Why simulation tables may have no rows: the steps the time limit cut, or none."""
    if sim is None or not sim.cut:
        return ""
    return (
        f"verdict {sim.verdict}: the time limit cut "
        f"{count_text(len(sim.cut), 'simulation step')} before they ran"
    )


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
    by name (``planner.report.pictures``; SVG preferred). ``lines``, ``workload`` and ``tiers`` are
    report.md's headline, workload assumptions and tiers table (``planner.report.solve_html``
    gives them), so both reports say the same.
    """
    inst = plan_result.instance
    summary = tables["summary"]
    shown: dict[str, pl.DataFrame] = {"summary": _transposed(summary)}
    if tiers is not None:
        shown["tiers"] = tiers
    family = plan_result.family if isinstance(plan_result.family, Tables) else None
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
    # What the time limit cut (pictures, tables, families), as report.md lists it.
    notes: list[str] = [] if plan_result.design is None else cut_notes(plan_result.design.notes)
    if plan_result.sim is not None:
        notes += list(plan_result.sim.reasons) + list(plan_result.sim.notes)
    notes.append(
        "Every table is written in full beside this page as CSV (rounded) and Parquet (exact)."
    )
    return render_page(
        f"fabric-planner report: {inst.name}",
        [*lines, *result_lines(plan_result)],
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
        empty_reason=empty_reason(plan_result.sim),
    )


def simulation_page(
    design: Design,
    sim: SimResult,
    tables: Mapping[str, pl.DataFrame],
    figures: Mapping[str, bytes],
    *,
    lines: Sequence[str],
    tiers: pl.DataFrame,
    family: Tables | None = None,
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
        empty_reason=empty_reason(sim),
    )
