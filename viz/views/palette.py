"""One palette for every view: prefill and decode keep their colours everywhere.

Okabe & Ito's colour-blind-safe set (Color Universal Design, 2008). Blue and orange stay
distinguishable under the common forms of colour blindness, and in greyscale.
"""

PREFILL = "#0072B2"  # blue: the one parallel pass over the prompt
DECODE = "#E69F00"  # orange: one token per pass
CHOSEN = "#D55E00"  # vermillion: the token that was picked
SPECIAL = "#CC79A7"  # reddish purple: control tokens such as <|im_start|>
FORMULA = "#000000"  # black: a value computed by formula, drawn over the measured one
MUTED = "#999999"  # grey: context, removed candidates, "without GQA"
ACCENT = "#009E73"  # bluish green: a second series (e.g. the other trace in a comparison)
SKY = "#56B4E9"
YELLOW = "#F0E442"

PHASE = {"prefill": PREFILL, "decode": DECODE}

# Categorical order for series that have no meaning of their own (layers, traces, ...).
CYCLE = [PREFILL, DECODE, ACCENT, CHOSEN, SKY, SPECIAL, YELLOW, FORMULA]

# Sequential and diverging colour scales for heatmaps (both colour-blind safe).
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu"


def shades(n: int) -> list[str]:
    """`n` colours from the sequential scale, dark to light, as hex (e.g. one per layer).

    Viridis stays ordered in greyscale and under colour blindness, so layer 0 and the last
    layer remain tellable apart however many layers a model has.
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    cmap = colormaps[SEQUENTIAL.lower()]
    if n <= 1:
        return [to_hex(cmap(0.0))] * max(n, 0)
    return [to_hex(cmap(0.9 * i / (n - 1))) for i in range(n)]  # skip viridis' pale yellow end
