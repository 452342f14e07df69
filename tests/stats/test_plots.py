"""Plot geometry in the SVG view box (no database)."""

from __future__ import annotations

from stats.plots import histogram, lines, scatter


def test_it_places_scatter_points_inside_the_frame_with_higher_values_up() -> None:
    chart = scatter([0.1, 0.5, None, 0.9], [0.0, 0.5, 0.3, 1.0], ["a", "b", "c", "d"], x_label="m", y_label="h")
    frame = chart.frame
    assert len(chart.points) == 3 and chart.points[1].title == "b: 0.500, 0.500"
    for point in chart.points:
        assert frame.left <= point.x <= frame.right and frame.top <= point.y <= frame.bottom
    assert chart.points[0].x < chart.points[2].x and chart.points[0].y > chart.points[2].y
    assert frame.x_ticks and frame.y_ticks
    assert scatter([None], [1.0], ["a"], x_label="m", y_label="h").empty


def test_it_counts_every_value_in_one_histogram_bar() -> None:
    values = [-0.5, -0.1, 0.0, 0.05, 0.3, 0.3, 0.5]
    chart = histogram(values, x_label="metric - human", bins=4)
    assert len(chart.bars) == 4
    assert sum(int(bar.title.rsplit(": ", 1)[1]) for bar in chart.bars) == len(values)
    tallest = max(chart.bars, key=lambda bar: bar.height)
    assert tallest.y == chart.frame.top


def test_it_draws_one_polyline_per_series_skipping_gaps() -> None:
    chart = lines(
        [0.8, 0.9, 0.99], [("precision", [0.6, None, 0.5]), ("recall", [0.4, 0.7, 0.9])], x_label="t", y_label="v"
    )
    assert [s.name for s in chart.series] == ["precision", "recall"]
    assert len(chart.series[0].points.split()) == 2 and len(chart.series[1].points.split()) == 3
