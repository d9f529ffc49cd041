"""CM-DARE: "Characterizing and Modeling Distributed Training with Transient Cloud GPU Servers" (Li, Walls, Guo, ICDCS 2020).

One module per figure or table, rebuilt from cake-lab/CM-DARE@263b7f1 (see :mod:`perfmodel.papers`). Upstream file names
(``figure_4``, ``figure_5``, ``figure_12``) follow the SIGMETRICS draft, not the ICDCS paper; each item keeps its upstream name in
``upstream``. Notebook short names in the items: ``sp2`` = ``sigmetrics2020_speed_prediction_2.ipynb``, ``sp1`` =
``Sigmetrics2020_speed_prediction.ipynb``, ``ckpt`` = ``Sigmetrics2020_checkpoint_overhead.ipynb``, ``redraws`` =
``Sigmetrics2020_redraws.ipynb``, ``S2020`` = ``Sigmetrics2020.ipynb``; cell numbers are 0-based indices into the notebook's cells.
"""
