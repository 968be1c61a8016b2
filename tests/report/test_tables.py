"""Report tables: what a reader sees first."""

from sandbox_fleet.report.tables import context_table


def test_long_context_table_shows_reference_turns_and_folds_the_rest():
    medians = {str(n): 800 * n * (n + 1) // 2 for n in range(1, 41)}
    html = context_table({"tokens": {"median_input_by_turns": medians, "turn_tokens": 800.0}})
    short, full = html.split("<details>")
    # The short table: the document's reference counts present (1, 2, 5, 11, 20, 21) and the largest (40).
    assert short.count("<tr>") - 1 == 7
    assert "all 40 turn counts" in full and full.count("<tr>") - 1 == 40
