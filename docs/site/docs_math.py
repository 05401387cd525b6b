"""Formulas of the code's marker comments, typeset for the pages.

The comments are written for a reader in an editor, in plain Unicode (S = Q·Kᵀ, α_ij = e^S'_ij / Σ_t
e^S'_it); the pages set the same formulas with KaTeX. A marker line has the shape

    [step 5] FORMULA   (SHAPES);  DETAIL

and is cut at its separators (two or more spaces, ';' before two spaces, ': ', and ', ' before a word of
prose). A piece is a formula when it holds an operator (= → ← × · Σ √ ∞ ᵀ) and at most one word of
prose ("for", "when"); formulas are rewritten as TeX, everything else stays text. Used by docs/site/annotate.py.

The sentences of `attn walk` (lesson/sentences.cpp) mark their formulas themselves, with $…$:
sentence_html() sets those pieces the same way (docs/site/docs_example.py).
"""
import html
import re

OPERATORS = set("=→←×·Σ√∞ᵀ")
# Words that belong to formulas, not to prose.
MATH_WORDS = {"softmax", "softmax_row", "max", "max_t", "Var", "cos", "scale", "tile", "row"}
WORD = re.compile(r"[A-Za-z][A-Za-z_'-]*")
SEPARATOR = re.compile(r"(\s{2,}|;\s{2,}|:\s+|,\s+(?=[A-Za-z]{2,}\b))")

# Whole words first (before the subscripts are braced), then single symbols.
WORDS = [("softmax_row", r"\operatorname{softmax}_{\text{row}}"), ("softmax", r"\operatorname{softmax}"),
         ("Var", r"\operatorname{Var}"), ("max_t", r"\max_t"), ("max", r"\max"), ("d_model", r"d_{\text{model}}"),
         ("scale", r"\mathrm{scale}"), ("cos", r"\cos")]
SYMBOLS = [("−∞", r"-\infty "), ("∞", r"\infty "), ("−", "-"), ("ᵀ", r"^\top "), ("·", r" \cdot "),
           ("×", r" \times "), ("→", r" \to "), ("←", r" \leftarrow "), ("α", r"\alpha "), ("Σ", r"\sum"),
           ("…", r"\dots "), ("ℓ", r"\ell "), ("≤", r"\le "), ("≥", r"\ge "), ("‖", r"\|"),
           ("θ", r"\theta "), ("²", "^2")]
SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉ᵢⱼ", "0123456789ij")


def prose_words(piece):
    return [w for w in WORD.findall(piece) if len(w) >= 3 and w not in MATH_WORDS and "_" not in w]


def is_formula(piece):
    return any(c in OPERATORS for c in piece) and len(prose_words(piece)) <= 1


def tex(formula):
    """Plain-Unicode formula → TeX. Words of prose inside it are kept as \\text{…}."""
    kept = []

    def keep(m):
        word = m.group(0)
        if len(word) < 3 or word in MATH_WORDS or "_" in word:
            return word
        kept.append(word)
        return f"\x01{len(kept) - 1}\x01"

    s = WORD.sub(keep, formula)
    for word, command in WORDS:
        s = re.sub(rf"(?<![A-Za-z_\\{{]){word}(?![A-Za-z_])", lambda m: command, s)
    s = re.sub(r"√\(([^()]*)\)", r"\\sqrt{\1}", s)
    s = re.sub(r"√([A-Za-z0-9_]+)", r"\\sqrt{\1}", s)
    s = re.sub(r"e\^\(([^()]*)\)", r"e^{\1}", s)               # e^(s_j − m) → e^{s_j − m}
    s = re.sub(r"e\^(−∞|[A-Za-z]'?(?:_[a-z0-9]+)?)", r"e^{\1}", s)  # e^S'_ij → e^{S'_ij}
    s = re.sub(r"[₀-₉ᵢⱼ]+", lambda m: "_{" + m.group(0).translate(SUBSCRIPTS) + "}", s)  # α₁ⱼ → α_{1j}
    s = re.sub(r"([A-Za-zα-ω)]'?)_([a-z]{3,})\b", r"\1_{\\text{\2}}", s)  # S_tile → S_{\text{tile}}
    s = re.sub(r"([A-Za-zα-ω)]'?)_([a-z0-9]{2,})", r"\1_{\2}", s)        # S_ij → S_{ij}
    for plain, command in SYMBOLS:
        s = s.replace(plain, command)
    return re.sub(r"\x01(\d+)\x01", lambda m: r"\text{ " + kept[int(m.group(1))] + " }", s).strip()


def marker_line_html(marker, rest, anchor_id):
    """One marker line as HTML: the marker (carrying its anchor), then each piece as formula or text."""
    out = [f'<span class="marker" id="{anchor_id}">[{html.escape(marker)}]</span> ']
    for piece in SEPARATOR.split(rest.strip()):
        if SEPARATOR.fullmatch(piece):
            out.append(html.escape(piece.strip()) + " " if piece.strip() else " &nbsp; ")
        elif is_formula(piece):
            out.append("$" + html.escape(tex(piece)) + "$")
        else:
            out.append(html.escape(piece))
    return "".join(out)


def sentence_html(sentence):
    """A sentence of `attn walk` as HTML: each $…$ piece typeset as above, the words between escaped."""
    pieces = sentence.split("$")
    return "".join("$" + html.escape(tex(p)) + "$" if k % 2 else html.escape(p) for k, p in enumerate(pieces))
