-- Revision 0002, frozen from 0002_hybrid_settings.py.
-- Settings for hybrid ranking: BM25/vector weight and temporal context weight.
--
-- Revision ID: 0002
-- Revises: 0001
-- Create Date: 2026-12-02

insert into memex.settings (name, value) values
            ('hybrid_vector_weight', '0.5'),
            ('context_weight', '0.5')
        on conflict (name) do nothing;
