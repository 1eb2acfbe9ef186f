-- Reconcile looks texts up among closed memories too (to reopen one whose
-- text came back in MEMORIES.txt); memories_norm_current covers only the
-- current ones.
CREATE INDEX memories_norm ON memories(norm);
