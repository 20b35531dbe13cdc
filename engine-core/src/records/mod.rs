//! Game records: CSA, KIF/KIFU, USI lines.
