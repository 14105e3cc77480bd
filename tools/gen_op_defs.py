#!/usr/bin/env python3
"""gen_op_defs.py - writes src/graph/op_defs.c, the built-in OpDefs, from TensorFlow's op registry.

Graphs normally carry their own OpDefs (meta_info_def.stripped_op_list); these built-ins are the
fallback for graphs that lack them, and the builder's table of ops it can put in a graph. Each
OpDef is exactly what tensorflow.python.framework.op_def_registry.get(name) returns, with summary
and description (op and args) cleared, as TensorFlow strips them into a MetaGraph.

Usage: /tmp/tfvenv/bin/python tools/gen_op_defs.py > src/graph/op_defs.c
"""
import sys

from tensorflow.python.framework import op_def_registry
import tensorflow_text  # noqa: F401  (registers TF Text's ops, which src/ops/tftext.c runs)

# The builder's original table first (its order), then every op the runtime may run or meet in a
# real SavedModel (ops.md section 3 and the tf-serving fixtures), sorted.
BUILDER_OPS = """
Placeholder PlaceholderWithDefault Const Identity NoOp Square Mul AddV2 Sub RealDiv Neg MatMul
BiasAdd Relu Sigmoid Tanh Softmax ArgMax Cast Reshape Sum Mean VarHandleOp ReadVariableOp
AssignVariableOp VarIsInitializedOp HashTableV2 InitializeTableFromTextFileV2 LookupTableFindV2
Shape ExpandDims Tile Range SaveV2 RestoreV2 StringJoin ShardedFilename MergeV2Checkpoints Pack
Select StaticRegexFullMatch
""".split()

RUNTIME_OPS = """
CaseFoldUTF8 NormalizeUTF8 RegexSplitWithOffsets WordpieceTokenizeWithOffsets
TFText>WhitespaceTokenizeWithOffsetsV2 WhitespaceTokenizeWithOffsets UnicodeScriptTokenizeWithOffsets
TFText>RoundRobinTrim TFText>NgramsStringJoin
TFText>FastWordpieceDetokenize
Abs Add AddN All Any ArgMin Assert Assign AssignAdd AssignAddVariableOp AssignSub
AssignSubVariableOp AvgPool AvgPool3D BatchMatMul BatchMatMulV2 BatchMatMulV3 BatchToSpaceND
CudnnRNN CudnnRNNV2 CudnnRNNV3 CudnnRNNParamsSize
LSTMBlockCell BlockLSTM BlockLSTMV2 GRUBlockCell LSTMBlockCellGrad BlockLSTMGrad BlockLSTMGradV2 GRUBlockCellGrad
BiasAddV1 BroadcastTo Case Ceil CheckNumerics ClipByValue Concat ConcatV2 Conv2D
Conv2DBackpropInput Conv3D Conv3DBackpropInputV2 Cos Cumsum Cumprod DepthwiseConv2dNative DestroyResourceOp DisableCopyOnRead
Div DivNoNan Einsum Elu Empty EnsureShape Equal Erf Exp Expm1 Fill Floor FloorDiv FloorMod
FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3 Gather GatherNd GatherV2 Greater GreaterEqual
IdentityN If InitializeTableV2 IsFinite IsInf IsNan LRN LeakyRelu Less LessEqual Log Log1p
LogSoftmax LogicalAnd LogicalNot LogicalOr LookupTableExportV2 LookupTableImportV2
LookupTableInsertV2 LookupTableRemoveV2 LookupTableSizeV2 Max MaxPool MaxPool3D MaxPoolV2 Maximum
Min Minimum MirrorPad MutableDenseHashTableV2 MutableHashTableV2 NotEqual OneHot OnesLike Pad
PadV2 ParseExample ParseExampleV2 ParseSingleExample PartitionedCall Pow PreventGradient Print
PrintV2 Prod RandomStandardNormal RandomUniform Rank ReadFile Reciprocal Relu6 ResizeArea ResizeBicubic ResizeBilinear
ResizeNearestNeighbor ResourceGather RestoreSlice Round Rsqrt SaveSlices SelectV2 Selu
ShardedFilespec Sign Sin Size Slice Snapshot Softplus Softsign SpaceToBatchND Split SplitV Sqrt
SquaredDifference Squeeze StatefulPartitionedCall StatelessIf StatelessWhile StopGradient
StridedSlice StringToHashBucketFast StringToHashBucketStrong StringLower StringUpper StringStrip
Substr StringToNumber ReduceJoin Sum Transpose TruncatedNormal Unpack Variable VariableV2
Where While ZerosLike _FusedConv2D _FusedDepthwiseConv2dNative _FusedMatMul
EmptyTensorList TensorListConcat TensorListConcatV2 TensorListElementShape TensorListFromTensor
TensorListGather TensorListGetItem TensorListLength TensorListPopBack TensorListPushBack
TensorListReserve TensorListResize TensorListScatter TensorListScatterIntoExistingList
TensorListScatterV2 TensorListSetItem TensorListSplit TensorListStack
TopKV2 ScatterNd TensorScatterUpdate TensorScatterAdd TensorScatterSub TensorScatterMin
TensorScatterMax Bucketize SparseToDense
BitwiseAnd BitwiseOr BitwiseXor LeftShift RightShift Invert PopulationCount MatrixBandPart MatrixSolve MatrixInverse
MatrixDeterminant MatrixDiag MatrixDiagV2 MatrixDiagV3 MatrixDiagPart MatrixDiagPartV2 MatrixDiagPartV3 MatrixSetDiag
MatrixSetDiagV2 MatrixSetDiagV3 Roll Bitcast UnsortedSegmentSum UnsortedSegmentMax UnsortedSegmentMin
UnsortedSegmentProd SegmentSum SegmentMean SegmentMax SegmentMin SegmentProd Cholesky MatrixTriangularSolve Qr LowerBound UpperBound Cross
Switch RefSwitch Merge RefMerge Enter RefEnter Exit RefExit NextIteration RefNextIteration LoopCond
ControlTrigger TensorArrayV3 TensorArrayReadV3 TensorArrayWriteV3 TensorArrayGatherV3
TensorArrayScatterV3 TensorArrayConcatV3 TensorArraySplitV3 TensorArraySizeV3 TensorArrayCloseV3
StatelessRandomUniform StatelessRandomNormal StatelessTruncatedNormal StatelessRandomUniformInt
StatelessRandomUniformFullInt StatelessRandomUniformV2 StatelessRandomNormalV2
StatelessTruncatedNormalV2 StatelessRandomUniformIntV2 StatelessRandomUniformFullIntV2
StatelessRandomGetKeyCounter StatelessRandomGetKeyCounterAlg StatelessRandomGetAlg RandomUniformInt
Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Lgamma Digamma Erfinv Ndtri Rint Inv BesselI0e BesselI1e
Erfc Atan2 Xlogy Xdivy Xlog1py TruncateDiv TruncateMod Igamma Igammac BroadcastArgs BroadcastGradientArgs
Complex Real Imag ComplexAbs Angle Conj FFT IFFT FFT2D IFFT2D FFT3D IFFT3D RFFT IRFFT RFFT2D IRFFT2D RFFT3D
IRFFT3D Unique UniqueV2 UniqueWithCounts UniqueWithCountsV2 Bincount DenseBincount CTCGreedyDecoder
AdjustContrastv2 AdjustHue AdjustSaturation RGBToHSV HSVToRGB ImageProjectiveTransformV2
ImageProjectiveTransformV3 CropAndResize ScaleAndTranslate StatelessRandomGammaV2 StatelessRandomGammaV3 RandomGamma
StatelessMultinomial Multinomial StatelessRandomPoisson RandomPoissonV2 StatelessShuffle RandomShuffle
StaticRegexReplace RegexReplace RegexFullMatch StringSplitV2 StringNGrams AsString UnsortedSegmentJoin
UnicodeDecode UnicodeDecodeWithOffsets UnicodeEncode RaggedTensorToTensor RaggedRange RaggedGather
RaggedBincount SparseCross SparseCrossHashed SparseCrossV2 StringLength
SparseConcat SparseSlice SparseSplit SparseSoftmax SparseReduceSumSparse SparseReduceMaxSparse DenseCountSparseOutput
SparseCountSparseOutput RaggedCountSparseOutput ComputeAccidentalHits RaggedCross RaggedTensorToVariant RaggedTensorFromVariant
HistogramFixedWidth ReverseSequence DynamicPartition DynamicStitch ParallelDynamicStitch Diag DiagPart
UnravelIndex InvertPermutation GuaranteeConst ConjugateTranspose DepthToSpace SpaceToDepth L2Loss
SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits InTopK InTopKV2
SparseSegmentSum SparseSegmentMean SparseSegmentSqrtN SparseSegmentSumWithNumSegments
SparseSegmentMeanWithNumSegments SparseSegmentSqrtNWithNumSegments SparseReorder SparseReshape
SparseFillEmptyRows SparseTensorDenseMatMul SparseTensorDenseAdd StringFormat
MulNoNan EuclideanNorm CumulativeLogsumexp BesselI0 BesselI1 NonMaxSuppression NonMaxSuppressionV2
NonMaxSuppressionV3 NonMaxSuppressionV4 NonMaxSuppressionV5 NonMaxSuppressionWithOverlaps
ExtractImagePatches ExtractVolumePatches MaxPoolWithArgmax FakeQuantWithMinMaxArgs
FakeQuantWithMinMaxVars FakeQuantWithMinMaxVarsPerChannel EncodeBase64 DecodeBase64 DecodeRaw
DecodePaddedRaw ListDiff LogMatrixDeterminant Lu SelfAdjointEigV2 Svd SparseDenseCwiseMul
SparseDenseCwiseDiv SparseDenseCwiseAdd SparseReduceSum SparseReduceMax
StringToHashBucket Fingerprint DecodeJpeg DecodePng DecodeImage EncodePng EncodeJpeg StringSplit NextAfter
BesselJ0 BesselJ1 BesselY0 BesselY1 BesselK0 BesselK1 BesselK0e BesselK1e CombinedNonMaxSuppression DecodeCSV Dilation2D
DrawBoundingBoxes DrawBoundingBoxesV2 Zeta Polygamma EditDistance
CTCLoss SetSize DenseToDenseSetOperation DenseToSparseSetOperation SparseToSparseSetOperation
RaggedTensorToSparse SparseSparseMaximum SparseSparseMinimum SparseAdd CTCBeamSearchDecoder
DecodeGif DecodeBmp FractionalMaxPool FractionalAvgPool SampleDistortedBoundingBox SampleDistortedBoundingBoxV2
StatelessSampleDistortedBoundingBox ExtractGlimpse ExtractGlimpseV2 StatelessParameterizedTruncatedNormal ParameterizedTruncatedNormal DecodeWebP
DecodeAndCropJpeg
DecodeWav EncodeWav AudioSpectrogram Mfcc ParseSequenceExample ParseSequenceExampleV2
ParseSingleSequenceExample DecodeCompressed ParseTensor SerializeTensor DecodeJSONExample
Dawsn Expint FresnelCos FresnelSin Spence Betainc TridiagonalSolve TridiagonalMatMul BandedTriangularSolve
MatrixSquareRoot MatrixLogarithm Eig
QuantizeV2 Dequantize QuantizeAndDequantizeV2 QuantizeAndDequantizeV3 QuantizeAndDequantizeV4 UnicodeScript
UnicodeTranscode IsotonicRegression SobolSample ApproxTopK QuantizedConcat
ApplyGradientDescent ResourceApplyGradientDescent ApplyProximalGradientDescent
ResourceApplyProximalGradientDescent ApplyAdadelta ResourceApplyAdadelta ApplyAdagrad ResourceApplyAdagrad
ApplyAdagradV2 ResourceApplyAdagradV2 ApplyProximalAdagrad ResourceApplyProximalAdagrad ApplyAdagradDA
ResourceApplyAdagradDA ApplyFtrl ResourceApplyFtrl ApplyFtrlV2 ResourceApplyFtrlV2 ApplyMomentum
ResourceApplyMomentum ResourceApplyKerasMomentum ApplyAdam ResourceApplyAdam ResourceApplyAdamWithAmsgrad
ApplyAdaMax ResourceApplyAdaMax ApplyRMSProp ResourceApplyRMSProp ApplyCenteredRMSProp
ResourceApplyCenteredRMSProp ApplyAddSign ResourceApplyAddSign ApplyPowerSign ResourceApplyPowerSign
SparseApplyProximalGradientDescent ResourceSparseApplyProximalGradientDescent SparseApplyAdadelta
ResourceSparseApplyAdadelta SparseApplyAdagrad ResourceSparseApplyAdagrad SparseApplyAdagradV2
ResourceSparseApplyAdagradV2 SparseApplyProximalAdagrad ResourceSparseApplyProximalAdagrad
SparseApplyAdagradDA ResourceSparseApplyAdagradDA SparseApplyFtrl ResourceSparseApplyFtrl SparseApplyFtrlV2
ResourceSparseApplyFtrlV2 SparseApplyMomentum ResourceSparseApplyMomentum ResourceSparseApplyKerasMomentum
SparseApplyRMSProp ResourceSparseApplyRMSProp SparseApplyCenteredRMSProp ResourceSparseApplyCenteredRMSProp
ResourceScatterUpdate ResourceScatterAdd ResourceScatterSub ResourceScatterMul ResourceScatterDiv ResourceScatterMin
ResourceScatterMax ScatterUpdate ScatterAdd ScatterSub ScatterMul ScatterDiv ScatterMin ScatterMax ResourceScatterNdUpdate
ResourceScatterNdAdd ResourceScatterNdSub ResourceScatterNdMin ResourceScatterNdMax ScatterNdUpdate ScatterNdAdd ScatterNdSub
ScatterNdMin ScatterNdMax ScatterNdNonAliasingAdd ResourceGatherNd CountUpTo ResourceCountUpTo StridedSliceAssign ResourceStridedSliceAssign
IgammaGradA RandomGammaGrad CholeskyGrad QuantizeAndDequantizeV4Grad CropAndResizeGradImage CropAndResizeGradBoxes SymbolicGradient ScaleAndTranslateGrad
LookupTableInsertV2 LookupTableRemoveV2 LookupTableExportV2 LookupTableImportV2 LookupTableSizeV2
MutableHashTableOfTensorsV2 AnonymousHashTable AnonymousMutableHashTable
AnonymousMutableHashTableOfTensors AnonymousMutableDenseHashTable VariableShape EmptyTensorMap
TensorMapInsert TensorMapLookup TensorMapErase TensorMapHasKey TensorMapSize TensorMapStackKeys
OptionalNone OptionalFromValue OptionalHasValue OptionalGetValue StackV2 StackPushV2 StackPopV2
StackCloseV2
ReluGrad Relu6Grad LeakyReluGrad EluGrad SeluGrad SoftplusGrad SoftsignGrad SigmoidGrad TanhGrad SqrtGrad RsqrtGrad
ReciprocalGrad InvGrad BiasAddGrad StridedSliceGrad MirrorPadGrad ConcatOffset FakeQuantWithMinMaxArgsGradient
FakeQuantWithMinMaxVarsGradient FakeQuantWithMinMaxVarsPerChannelGradient SparseSegmentSumGrad SparseSegmentMeanGrad
SparseSegmentSqrtNGrad SparseSegmentSumGradV2 SparseSegmentMeanGradV2 SparseSegmentSqrtNGradV2 ResizeBilinearGrad
ResizeBicubicGrad ResizeNearestNeighborGrad SparseAddGrad SparseSliceGrad SparseFillEmptyRowsGrad
Conv2DBackpropFilter Conv2DBackpropFilterV2 Conv2DBackpropInputV2 Conv3DBackpropFilter Conv3DBackpropFilterV2
Conv3DBackpropInput DepthwiseConv2dNativeBackpropFilter DepthwiseConv2dNativeBackpropInput AvgPoolGrad AvgPool3DGrad
MaxPoolGrad MaxPoolGradV2 MaxPool3DGrad MaxPoolGradGrad MaxPoolGradGradV2 MaxPool3DGradGrad MaxPoolGradWithArgmax
MaxPoolGradGradWithArgmax FusedBatchNormGrad FusedBatchNormGradV2 FusedBatchNormGradV3 LRNGrad
Dilation2DBackpropFilter Dilation2DBackpropInput FractionalMaxPoolGrad FractionalAvgPoolGrad
BatchNormWithGlobalNormalization BatchNormWithGlobalNormalizationGrad
StatefulUniform StatefulUniformInt StatefulUniformFullInt StatefulStandardNormal StatefulStandardNormalV2
StatefulTruncatedNormal StatefulRandomBinomial RngReadAndSkip RngSkip NonDeterministicInts StatelessRandomBinomial
RandomPoisson RandomIndexShuffle RandomCrop UniformCandidateSampler LogUniformCandidateSampler
LearnedUnigramCandidateSampler ThreadUnsafeUnigramCandidateSampler AllCandidateSampler FixedUnigramCandidateSampler
LinSpace Mod TopK Reverse SpaceToBatch BatchToSpace InplaceAdd InplaceSub InplaceUpdate DataFormatDimMap
DataFormatVecPermute AccumulateNV2 CheckNumericsV2 ApproximateEqual NthElement SparseMatMul Timestamp Fact ToBool
DeepCopy ParallelConcat TensorStridedSliceUpdate MatrixSolveLs RaggedFillEmptyRows
Requantize RequantizationRange QuantizeDownAndShrinkRange QuantizedRelu QuantizedRelu6 QuantizedBiasAdd
QuantizedMatMul QuantizedConv2D QuantizedMaxPool QuantizedAvgPool QuantizedReshape QuantizedMul
UniformQuantize UniformDequantize UniformRequantize UniformQuantizedClipByValue
UniformQuantizedAdd UniformQuantizedDot UniformQuantizedDotHybrid RequantizationRangePerChannel RequantizePerChannel QuantizedAdd
UniformQuantizedConvolution UniformQuantizedConvolutionHybrid QuantizedResizeBilinear QuantizedBatchNormWithGlobalNormalization QuantizedInstanceNorm
DebugIdentity DebugIdentityV2 DebugIdentityV3 DebugNanCount DebugNumericSummary DebugNumericSummaryV2 Copy CopyHost
DebugGradientIdentity DebugGradientRefIdentity RefIdentity RefSelect ScalarSummary HistogramSummary TensorSummary
TensorSummaryV2 MergeSummary FusedPadConv2D FusedResizeAndPadConv2D BatchFunction
FIFOQueue FIFOQueueV2 PaddingFIFOQueue PaddingFIFOQueueV2 RandomShuffleQueue RandomShuffleQueueV2 PriorityQueue
PriorityQueueV2 FakeQueue QueueEnqueue QueueEnqueueV2 QueueEnqueueMany QueueEnqueueManyV2 QueueDequeue QueueDequeueV2
QueueDequeueMany QueueDequeueManyV2 QueueDequeueUpTo QueueDequeueUpToV2 QueueClose QueueCloseV2 QueueSize QueueSizeV2
QueueIsClosed QueueIsClosedV2
TextLineReader TextLineReaderV2 WholeFileReader WholeFileReaderV2 IdentityReader IdentityReaderV2
FixedLengthRecordReader FixedLengthRecordReaderV2 TFRecordReader TFRecordReaderV2 ReaderRead ReaderReadV2
ReaderReadUpTo ReaderReadUpToV2 ReaderNumRecordsProduced ReaderNumRecordsProducedV2 ReaderNumWorkUnitsCompleted
ReaderNumWorkUnitsCompletedV2 ReaderSerializeState ReaderSerializeStateV2 ReaderRestoreState ReaderRestoreStateV2
ReaderReset ReaderResetV2
Stage Unstage StagePeek StageSize StageClear MapStage MapUnstage MapUnstageNoKey MapPeek MapSize MapIncompleteSize
MapClear OrderedMapStage OrderedMapUnstage OrderedMapUnstageNoKey OrderedMapPeek OrderedMapSize
OrderedMapIncompleteSize OrderedMapClear
Barrier BarrierInsertMany BarrierTakeMany BarrierClose BarrierReadySize BarrierIncompleteSize
TensorDataset TensorSliceDataset RangeDataset MapDataset ParallelMapDataset ParallelMapDatasetV2
FilterDataset BatchDataset BatchDatasetV2 PaddedBatchDatasetV2 TakeDataset SkipDataset RepeatDataset ZipDataset
ConcatenateDataset FlatMapDataset ScanDataset TakeWhileDataset UnbatchDataset ReduceDataset DatasetCardinality
PrefetchDataset ModelDataset OptimizeDataset OptimizeDatasetV2 OptionsDataset FinalizeDataset
MaxIntraOpParallelismDataset PrivateThreadPoolDataset AnonymousIteratorV2 AnonymousIteratorV3 MakeIterator
IteratorGetNext IteratorGetNextSync IteratorGetNextAsOptional DeleteIterator WindowDataset InterleaveDataset
UniqueDataset ShuffleDataset ShuffleDatasetV2 ShuffleDatasetV3 AnonymousSeedGenerator DummySeedGenerator
DeleteSeedGenerator TextLineDataset TFRecordDataset FixedLengthRecordDataset FixedLengthRecordDatasetV2
ParallelInterleaveDatasetV2 ParallelInterleaveDatasetV3 ParallelInterleaveDatasetV4 ParallelBatchDataset
MapAndBatchDataset ShardDataset DirectedInterleaveDataset AssertCardinalityDataset IgnoreErrorsDataset CacheDataset
CacheDatasetV2 DummyMemoryCache AnonymousMemoryCache DeleteMemoryCache RandomDataset RandomDatasetV2
DatasetToSingleElement RewriteDataset
Conv SparseBincount ExtractJpegShape EncodeJpegVariableQuality
ConditionalAccumulator SparseConditionalAccumulator ResourceConditionalAccumulator AccumulatorApplyGradient
ResourceAccumulatorApplyGradient SparseAccumulatorApplyGradient AccumulatorNumAccumulated
ResourceAccumulatorNumAccumulated AccumulatorSetGlobalStep ResourceAccumulatorSetGlobalStep AccumulatorTakeGradient
ResourceAccumulatorTakeGradient SparseAccumulatorTakeGradient TemporaryVariable DestroyTemporaryVariable
MutexV2 MutexLock ConsumeMutexLock
SerializeSparse SerializeManySparse DeserializeSparse DeserializeManySparse AddSparseToTensorsMap AddManySparseToTensorsMap
TakeManySparseFromTensorsMap KmeansPlusPlusInitialization KMC2ChainInitialization NearestNeighbors
ImageSummary AudioSummaryV2 Batch Unbatch UnbatchGrad
GroupByWindowDataset GroupByReducerDataset ExperimentalGroupByWindowDataset ExperimentalGroupByReducerDataset
""".split()


def strip(op):
    op.summary = ""
    op.description = ""
    for a in list(op.input_arg) + list(op.output_arg) + list(op.attr):
        a.description = ""
    return op


def c_lines(text):
    out = []
    for line in text.splitlines():
        esc = line.replace("\\", "\\\\").replace('"', '\\"')
        out.append('    "%s\\n"' % esc)
    return out


def main():
    names = list(BUILDER_OPS)
    for n in sorted(set(RUNTIME_OPS)):
        if n not in names:
            names.append(n)
    body = []
    for n in names:
        d = op_def_registry.get(n)
        if d is None:
            sys.exit("gen_op_defs: TensorFlow has no op %s" % n)
        text = "op {\n" + "".join("  " + l + "\n" for l in str(strip(d)).splitlines()) + "}\n"
        body.extend(c_lines(text))
    print("/* op_defs.c - the built-in OpDefs (%d ops), as TensorFlow 2.21 registers them." % len(names))
    print(" *")
    print(" * GENERATED by tools/gen_op_defs.py from TensorFlow's op registry; do not edit by hand. Text-format")
    print(" * OpList with summaries and descriptions cleared, exactly as TensorFlow strips them into a")
    print(" * MetaGraph's stripped_op_list. The graph layer falls back on these when a graph carries no OpDef")
    print(" * for an op; the builder checks the graphs it builds against them. */")
    print('#include "graph/op_defs.h"')
    print()
    print("const char sm__builtin_op_list_text[] =")
    body[-1] += ";"
    print("\n".join(body))


if __name__ == "__main__":
    main()
