-- Every answered turn inserts its episodes, and each insert writes every
-- index of memories (issue 32: the index pages a commit dirties are written
-- to the WAL). Two of them need not hold what they held:
-- memories_embed_model (001) serves no statement since 006's partial
-- index memories_vector_model covers every query of vectors by model;
DROP INDEX memories_embed_model;
-- every lookup by normalised text leaves episodes out (kind <> 'episode'),
-- so memories_norm (003) need not hold them: an episode's key is its whole
-- text, and a turn's two episodes landed on two pages of it anywhere.
DROP INDEX memories_norm;
CREATE INDEX memories_norm ON memories(norm) WHERE kind <> 'episode';
