"""The part of Rally's own Python package (``esrally``) that tracks' ``track.py`` files import.

Many tracks of elastic/rally-tracks import Rally's modules: its exceptions, the ``ParamSource`` base class and the
corpus-reading helpers of ``esrally.track.params``, ``TrackProcessor``/``DefaultTrackPreparator`` of
``esrally.track.loader``, and ``Runner``/``mandatory`` of ``esrally.driver.runner``. When Rally itself is not
installed, ``import esrally...`` from track code resolves to these modules (``bench.compat.names``), which
behave as Rally 2.13's do for what a track can call. A name a track imports that is not here fails the import, and the
load, in one line naming it: never a look-alike that does nothing.
"""
