"""Provider adapters: each module turns one provider's API responses into `ScrapedOffer`s.

They know nothing of the database. `providers.registry` lists them; `providers.cassette` replays
recorded responses so every provider can run offline.
"""
