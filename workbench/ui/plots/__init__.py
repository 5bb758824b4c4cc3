"""The plots (pyqtgraph), imported only when a panel first draws one: pyqtgraph and these modules
take 160 ms to import, which the window's start-up does not pay. The window imports them on a
worker thread once it is up (:mod:`workbench.ui.preload`)."""
